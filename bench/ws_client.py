"""A minimal WebSocket client (RFC 6455) on asyncio streams, for the dashboard benchmark:
plain ``ws://`` only, no extensions, text messages in and close out. Enough to watch a
Channels socket the way a browser does (session cookie, Origin header) without adding a
dependency.

Contract: ``recv_text`` returns whole text messages (fragments joined), answers pings
itself, and raises ``ConnectionClosed`` with the server's close code when it closes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import struct
from urllib.parse import urlsplit

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
# Far above anything the dashboard sends; a bound so a broken peer cannot exhaust memory.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class HandshakeError(Exception):
    """The server did not switch protocols (e.g. 403: not logged in, or a bad origin)."""


class ConnectionClosed(Exception):
    def __init__(self, code: int | None) -> None:
        super().__init__(f"closed with code {code}")
        self.code = code


class WebSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def connect(
        cls, url: str, headers: dict[str, str] | None = None, timeout: float = 10.0
    ) -> WebSocket:
        parts = urlsplit(url)
        if parts.scheme != "ws" or not parts.hostname:
            raise ValueError(f"only ws:// URLs are supported, got {url!r}")
        port = parts.port or 80
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port), timeout
        )
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1",
            f"Host: {parts.hostname}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status, *header_lines = head.decode("latin-1").split("\r\n")
        if " 101 " not in f"{status} ":
            writer.close()
            raise HandshakeError(status)
        received = {
            k.strip().lower(): v.strip()
            for k, _, v in (h.partition(":") for h in header_lines if h)
        }
        expected = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
        if received.get("sec-websocket-accept") != expected:
            writer.close()
            raise HandshakeError("bad Sec-WebSocket-Accept")
        return cls(reader, writer)

    async def recv_text(self) -> str:
        parts: list[bytes] = []
        size = 0
        while True:
            fin, opcode, payload = await self._read_frame()
            if opcode == OP_PING:
                await self._send_frame(OP_PONG, payload)
            elif opcode == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                await self._send_close(payload[:2])
                raise ConnectionClosed(code)
            elif opcode in (OP_TEXT, OP_BINARY, OP_CONTINUATION):
                size += len(payload)
                if size > MAX_MESSAGE_BYTES:
                    raise ConnectionClosed(1009)
                parts.append(payload)
                if fin:
                    return b"".join(parts).decode()

    async def send_text(self, text: str) -> None:
        await self._send_frame(OP_TEXT, text.encode())

    async def send_binary(self, data: bytes) -> None:
        await self._send_frame(OP_BINARY, data)

    async def close(self, code: int = 1000) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._send_close(struct.pack("!H", code))
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()

    async def _read_frame(self) -> tuple[bool, int, bytes]:
        first, second = await self._reader.readexactly(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", await self._reader.readexactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", await self._reader.readexactly(8))[0]
        mask = await self._reader.readexactly(4) if second & 0x80 else b""
        payload = await self._reader.readexactly(length)
        if mask:
            payload = _masked(payload, mask)
        return bool(first & 0x80), first & 0x0F, payload

    async def _send_close(self, payload: bytes) -> None:
        if not self._writer.is_closing():
            await self._send_frame(OP_CLOSE, payload)

    async def _send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)  # a client masks every frame it sends
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        self._writer.write(head + mask + _masked(payload, mask))
        await self._writer.drain()


def _masked(payload: bytes, mask: bytes) -> bytes:
    repeated = (mask * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(
        len(payload), "big"
    )
