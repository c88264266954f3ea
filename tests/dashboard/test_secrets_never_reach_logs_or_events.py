"""Passwords never reach what Lockstep prints, logs or stores: a real ``manage.py
consume`` on a password-protected redis-server (and one started with a wrong password)
prints neither password and stores none in its events; a log line built from a URL is
masked by the logging configuration; a failed webhook delivery keeps the channel's secret
and URL credentials out of its stored error."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import redis

from lockstep.dashboard.alerts.dispatch import send_test
from lockstep.dashboard.alerts.models import Channel
from lockstep.workers import Producer, create_topic
from lockstep.workers.events import event_streams
from tests.support import redis_server, wait_until
from tests.workers.handlers import fail_flag
from tests.workers.harness import ConsumerProcess, body, events, handled_count, stream_entries

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "Never-Print-Me-8731"
WRONG_PASSWORD = "Wrong-Guess-5519"


@pytest.fixture(scope="module")
def protected_url() -> Iterator[str]:
    with redis_server(password=PASSWORD) as url:
        yield url


def test_it_keeps_the_password_out_of_a_consumers_output_and_events(
    protected_url: str, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(protected_url)
    client.flushall()
    create_topic(client, "orders", 2)
    client.set(fail_flag("card"), 1)  # the 3rd message's handler raises until this is gone
    producer = Producer(protected_url)
    for seq in range(6):
        flags = {"raise_while": "card"} if seq == 2 else {}
        producer.send("orders", f"order-{seq}", body(seq, **flags))
    producer.close()
    consumer = ConsumerProcess(
        protected_url, "orders", "mailer", "c1", tmp_path, env={"LOG_LEVEL": "DEBUG"}
    ).start()
    try:
        wait_until(lambda: events(client, "consume_failed"), 30, consumer.output)
        client.delete(fail_flag("card"))
        wait_until(lambda: handled_count(client) == 6, 30, consumer.output)
    finally:
        consumer.stop()

    output = consumer.output()
    stored = b"".join(  # every shard of the event log, raw
        value
        for stream in event_streams(client)
        for _, fields in stream_entries(client, stream)
        for value in fields.values()
    ).decode()
    assert "consuming orders as mailer" in output  # the output is really this consumer's
    assert "offset_committed" in stored and "card declined" in stored
    assert PASSWORD not in output
    assert PASSWORD not in stored


def test_it_keeps_a_wrong_password_out_of_the_error_output(
    protected_url: str, tmp_path: Path
) -> None:
    wrong = protected_url.replace(PASSWORD, WRONG_PASSWORD)
    consumer = ConsumerProcess(wrong, "orders", "mailer", "c2", tmp_path).start()
    try:
        wait_until(lambda: "Authentication" in consumer.output(), 30, consumer.output)
    finally:
        consumer.kill()
    assert WRONG_PASSWORD not in consumer.output()


def test_it_masks_a_url_password_in_any_log_line(protected_url: str, tmp_path: Path) -> None:
    script = (
        "import logging, os, django; django.setup(); "
        "logging.getLogger('lockstep.test').warning('connecting to %s', os.environ['REDIS_URL'])"
    )
    env = {**os.environ, "REDIS_URL": protected_url, "PYTHONPATH": str(REPO)}
    env.update(DJANGO_SETTINGS_MODULE="lockstep.dashboard.settings")
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert "connecting to redis://:***@127.0.0.1:" in done.stderr, done.stderr
    assert PASSWORD not in done.stderr + done.stdout


class _LeakyReceiver(BaseHTTPRequestHandler):
    """A receiver whose error page quotes what it got, as some proxies' pages do."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        said = f"bad gateway for {self.server.leak}".encode()  # type: ignore[attr-defined]
        self.send_response(502)
        self.send_header("Content-Length", str(len(said)))
        self.end_headers()
        self.wfile.write(said)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.django_db
def test_it_keeps_webhook_secrets_out_of_a_failed_deliverys_error() -> None:
    server = HTTPServer(("127.0.0.1", 0), _LeakyReceiver)
    target = f"http://127.0.0.1:{server.server_port}/lockstep"
    server.leak = (  # type: ignore[attr-defined]
        "upstream http://relay:Url-Pass-7261@relay.internal/in refused Hook-Secret-4410"
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        channel = Channel.objects.create(
            name="hook", kind="webhook", target=target, secret="Hook-Secret-4410"
        )
        delivery = send_test(channel)
    finally:
        server.shutdown()
    delivery.refresh_from_db()
    assert delivery.last_error == (
        "the webhook answered HTTP 502: bad gateway for "
        "upstream http://relay:***@relay.internal/in refused ***"
    )
    assert "Url-Pass-7261" not in delivery.last_error
    assert "Hook-Secret-4410" not in delivery.last_error
