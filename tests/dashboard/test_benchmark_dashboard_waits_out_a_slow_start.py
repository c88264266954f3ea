"""``benchmark dashboard`` waits out a web server that is slow to answer: a read that
times out (a loaded machine) is retried until the deadline like a refused connection,
and at the deadline it fails with one clear error (which ``run`` reports as the JSON
result's ``error``), never a bare ``TimeoutError`` traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench.dashboard import DashboardDidNotStart, _wait_for_http

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


@contextmanager
def silent_server(answer_after: int | None) -> Iterator[str]:
    """A local HTTP server that accepts and answers nothing, until its ``answer_after``th
    connection (None: never), which gets a 200. Yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)  # kept open, never answered: the client's read times out
            if answer_after is not None and len(held) > answer_after:
                conn.recv(65536)
                conn.sendall(OK)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/login/"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


@pytest.fixture
def daphne_stand_in() -> Iterator[subprocess.Popen[bytes]]:
    """A process that stays alive, as daphne does while it starts."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait(5)


def test_it_retries_reads_that_time_out_until_the_server_answers(
    daphne_stand_in: subprocess.Popen[bytes],
) -> None:
    with silent_server(answer_after=2) as url:
        _wait_for_http(url, daphne_stand_in, timeout=30.0, request_timeout=0.2)


def test_it_fails_with_one_clear_error_at_the_deadline(
    daphne_stand_in: subprocess.Popen[bytes],
) -> None:
    with silent_server(answer_after=None) as url, pytest.raises(DashboardDidNotStart) as failed:
        _wait_for_http(url, daphne_stand_in, timeout=1.0, request_timeout=0.2)
    assert "did not answer" in str(failed.value)
    assert "timed out" in str(failed.value)
