"""``manage.py bootstrap_demo`` (run by ``make run``) creates the demo admin and a demo
viewer with their roles and prints both logins; run again, it resets their passwords."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command
from django.http import HttpRequest
from django.test import RequestFactory

from lockstep.dashboard.web.roles import REPLAY, VIEW_BODY

pytestmark = pytest.mark.django_db


def _bootstrap(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name in ("DEMO_ADMIN_USER", "DEMO_ADMIN_PASSWORD", "DEMO_VIEWER_USER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = StringIO()
    call_command("bootstrap_demo", stdout=out)
    return out.getvalue()


def _login_request() -> HttpRequest:
    """A login form's request: the throttling backend (django-axes) needs one."""
    return RequestFactory().post("/login/")


def test_it_creates_an_admin_and_a_viewer_and_prints_their_logins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    printed = _bootstrap(monkeypatch, DEMO_VIEWER_PASSWORD="look-but-do-not-touch")

    admin = User.objects.get(username="admin")
    viewer = User.objects.get(username="viewer")
    assert "Demo login: admin / " in printed
    assert "Demo viewer: viewer / look-but-do-not-touch" in printed
    assert (
        authenticate(_login_request(), username="viewer", password="look-but-do-not-touch")
        == viewer
    )
    assert [g.name for g in admin.groups.all()] == ["admin"]
    assert [g.name for g in viewer.groups.all()] == ["viewer"]
    assert admin.is_superuser and admin.is_staff
    assert not viewer.is_staff and not viewer.is_superuser
    assert not viewer.has_perm(REPLAY) and not viewer.has_perm(VIEW_BODY)


def test_it_resets_the_passwords_when_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    _bootstrap(monkeypatch, DEMO_VIEWER_PASSWORD="first-password-1")
    printed = _bootstrap(monkeypatch, DEMO_VIEWER_PASSWORD="second-password-2")

    assert User.objects.filter(username="viewer").count() == 1
    assert (
        authenticate(_login_request(), username="viewer", password="second-password-2") is not None
    )
    assert "second-password-2" in printed
