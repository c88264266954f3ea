"""After LOCKSTEP_LOGIN_FAILURE_LIMIT (5) failed logins for a username from one address,
the next attempt is refused even with the right password: a 429 that says why and for
how long. Another address, or another username, is not locked with it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-7"


@pytest.fixture
def operator(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("olga", password=PASSWORD)


def attempt(client: Client, password: str, username: str = "olga", address: str = "10.0.0.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_it_logs_in_with_the_right_password_after_a_few_typos(operator: User) -> None:
    client = Client()
    for _ in range(4):
        assert attempt(client, "typo").status_code == 200  # the form again, with the error
    answer = attempt(client, PASSWORD)
    assert answer.status_code == 302
    assert answer["Location"] == "/"


def test_it_refuses_the_sixth_attempt_even_with_the_right_password(operator: User) -> None:
    client = Client()
    for _ in range(4):
        assert attempt(client, "guess").status_code == 200
    assert attempt(client, "guess").status_code == 429  # the fifth failure locks
    answer = attempt(client, PASSWORD)
    assert answer.status_code == 429
    text = answer.content.decode()
    assert "Too many failed logins" in text
    assert "locked after 5 failed attempts: try again in 15 minutes" in text
    assert "_auth_user_id" not in client.session


def test_it_answers_json_clients_with_a_json_error(operator: User) -> None:
    client = Client()
    for _ in range(5):
        attempt(client, "guess")
    answer = client.post(
        "/login/",
        {"username": "olga", "password": PASSWORD},
        REMOTE_ADDR="10.0.0.7",
        HTTP_ACCEPT="application/json",
    )
    assert answer.status_code == 429
    assert answer.json() == {"error": "too many failed logins: try again in 15 minutes"}


def test_it_does_not_lock_the_same_user_from_another_address(operator: User) -> None:
    client = Client()
    for _ in range(5):
        attempt(client, "guess")
    assert attempt(client, PASSWORD, address="10.0.0.8").status_code == 302
