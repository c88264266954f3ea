"""Channels: admins add, edit, disable and delete them and send a test (to a local
receiver) whose result the page says; secrets are never rendered; channels from the
environment are read-only; operators and viewers only look."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.alerts.models import Channel, Delivery
from tests.support import free_port

pytestmark = pytest.mark.django_db

SECRET = "s3cret-do-not-show"


class Receiver:
    """A local webhook receiver answering ``status`` and keeping what it was sent."""

    def __init__(self) -> None:
        self.status = 200
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook/token-abc"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def _add(client: Client, url: str, **extra: str) -> Channel:
    form = {"name": "ops", "kind": "webhook", "target": url, "secret": SECRET, "enabled": "1"}
    response = client.post("/alerts/channels/new", {**form, **extra})
    assert response.status_code == 302, response.content.decode()
    return Channel.objects.get(name="ops")


def test_an_admin_adds_a_channel_whose_secret_and_url_path_are_never_shown(
    client: Client, admin_user: User, receiver: Receiver
) -> None:
    client.force_login(admin_user)

    channel = _add(client, receiver.url)

    assert (channel.kind, channel.target, channel.secret) == ("webhook", receiver.url, SECRET)
    listing = client.get("/alerts/channels").content.decode()
    edit = client.get(f"/alerts/channels/{channel.pk}").content.decode()
    assert SECRET not in listing and SECRET not in edit
    assert "token-abc" not in listing
    assert f"http://127.0.0.1:{receiver.server.server_port}/…" in listing


def test_the_send_test_button_says_sent_and_the_receiver_got_it(
    client: Client, admin_user: User, receiver: Receiver
) -> None:
    client.force_login(admin_user)
    channel = _add(client, receiver.url)

    response = client.post(f"/alerts/channels/{channel.pk}/test", follow=True)

    assert response.redirect_chain == [("/alerts/channels", 302)]
    assert f"Test sent to {channel.name}." in response.content.decode()
    assert [b["event"] for b in receiver.bodies] == ["test"]
    assert Delivery.objects.get(channel=channel).status == Delivery.SENT


def test_the_send_test_button_says_why_it_failed(
    client: Client, admin_user: User, receiver: Receiver
) -> None:
    receiver.status = 404
    client.force_login(admin_user)
    channel = _add(client, receiver.url)

    response = client.post(f"/alerts/channels/{channel.pk}/test", follow=True)

    page = response.content.decode()
    assert f"Test to {channel.name} failed:" in page
    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.FAILED
    assert delivery.last_error and delivery.last_error[:30] in page


def test_an_admin_edits_disables_and_deletes_a_channel_keeping_a_blank_secret(
    client: Client, admin_user: User, receiver: Receiver
) -> None:
    client.force_login(admin_user)
    channel = _add(client, receiver.url)

    client.post(
        f"/alerts/channels/{channel.pk}/save",
        {"name": "ops-2", "kind": "webhook", "target": receiver.url, "secret": "", "enabled": "1"},
    )
    channel.refresh_from_db()
    assert (channel.name, channel.secret) == ("ops-2", SECRET)

    client.post(f"/alerts/channels/{channel.pk}/enabled", {"enabled": "0"})
    channel.refresh_from_db()
    assert channel.enabled is False

    client.post(f"/alerts/channels/{channel.pk}/delete")
    assert not Channel.objects.exists()


def test_it_refuses_a_channel_its_kind_says_could_never_send(
    client: Client, admin_user: User
) -> None:
    client.force_login(admin_user)

    response = client.post(
        "/alerts/channels/new", {"name": "bad", "kind": "webhook", "target": "ftp://x"}
    )

    assert response.status_code == 400
    assert "must start with http:// or https://" in response.content.decode()
    assert not Channel.objects.exists()


def test_a_channel_from_the_environment_is_read_only(client: Client, admin_user: User) -> None:
    channel = Channel.objects.create(
        name="env-hook", kind="webhook", target="http://x.test/h", from_env=True
    )
    client.force_login(admin_user)

    edit = client.get(f"/alerts/channels/{channel.pk}")
    delete = client.post(f"/alerts/channels/{channel.pk}/delete")

    assert edit.status_code == 400 and delete.status_code == 400
    assert "declared in the environment" in delete.content.decode()
    assert Channel.objects.filter(pk=channel.pk).exists()


def test_an_operator_sees_channels_but_may_not_manage_or_test_them(
    client: Client, operator: User
) -> None:
    channel = Channel.objects.create(name="ops", kind="webhook", target="http://x.test/h")
    client.force_login(operator)

    page = client.get("/alerts/channels").content.decode()
    test = client.post(f"/alerts/channels/{channel.pk}/test")
    add = client.post("/alerts/channels/new", {"name": "x", "kind": "webhook"})

    assert "ops" in page and "Send test" not in page
    assert (test.status_code, add.status_code) == (403, 403)
    assert not Delivery.objects.exists()
