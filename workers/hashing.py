"""Stable key → queue mapping. Python's ``hash()`` is salted per process, so never use it."""

import zlib


def stable_hash(key: str) -> int:
    """CRC32 of the UTF-8 key: identical in every process, machine and Python version."""
    return zlib.crc32(key.encode("utf-8"))


def queue_for_key(key: str, queue_count: int) -> int:
    """Hash first, then take the modulo, so keys spread over all queues."""
    if queue_count < 1:
        raise ValueError("queue_count must be at least 1")
    return stable_hash(key) % queue_count
