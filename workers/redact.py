"""Secrets out of what is printed, logged or stored as text: passwords in URLs
(``redis://user:password@host``, ``?password=``) and known secret values.

The runtime's own messages never format a URL with its password; these helpers are for
the places that print a configured URL (``bin/run``, commands) and a safety net over text
that came from elsewhere (a library's exception, a receiver's error page)."""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterable

MASK = "***"
# scheme://user:password@ — the password is everything between the first ":" of the
# userinfo and the "@" (a literal "@" or "/" in a password must be percent-encoded).
_USERINFO_PASSWORD = re.compile(
    r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^:/?#@\s]*:)(?P<password>[^@/?#\s]+)@", re.IGNORECASE
)
# redis-py (and others) also take the password as a query parameter.
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&](?:password|passwd|pass|secret|token)=)(?P<value>[^&#\s]+)", re.IGNORECASE
)
# Shorter "secrets" would blank out ordinary words; no real secret is that short.
MIN_SECRET_LENGTH = 4


def mask_url(text: str) -> str:
    """``text`` with every URL password (userinfo or query parameter) replaced by ``***``;
    user names, hosts, ports and paths are kept so the URL still says where it points.
    Works on a bare URL and on any text containing URLs; text without one is unchanged."""
    text = _USERINFO_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m['head']}{MASK}", text)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``mask_url(text)`` with each of ``secrets`` (a webhook secret, an SMTP password;
    unset ones may be None or empty) also replaced by ``***`` wherever it appears."""
    known = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return mask_url(text)


class MaskUrlsFilter(logging.Filter):
    """A logging filter (for handlers) that masks URL passwords in the message and in the
    formatted traceback of every record it passes; it never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_url(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            formatted = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = mask_url(formatted)
        return True
