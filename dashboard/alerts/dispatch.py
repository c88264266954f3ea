"""Sends queued deliveries (placeholder until the channels land)."""

from __future__ import annotations

import threading


def send_due(limit: int = 100) -> int:
    return 0


def run(stop: threading.Event) -> None:
    while not stop.wait(0.5):
        send_due()
