"""Typed settings helpers for Django: the runtime's helpers, re-raised as
``ImproperlyConfigured`` so a bad value stops the web side at start-up."""

import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from lockstep.workers import env as runtime_env
from lockstep.workers.connection import CLUSTER_SCHEMES, is_cluster
from lockstep.workers.errors import ConfigurationError

T = TypeVar("T")


def _loud(reader: Callable[..., T], *args: object, **kwargs: object) -> T:
    try:
        return reader(*args, **kwargs)
    except ConfigurationError as exc:
        raise ImproperlyConfigured(str(exc)) from None


def env_str(name: str, default: str) -> str:
    return _loud(runtime_env.env_str, name, default)


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    return _loud(runtime_env.env_int, name, default, minimum=minimum)


def env_float(name: str, default: float, minimum: float | None = None) -> float:
    return _loud(runtime_env.env_float, name, default, minimum=minimum)


def env_bool(name: str, default: bool) -> bool:
    return _loud(runtime_env.env_bool, name, default)


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (case-insensitive, surrounding blanks ignored); anything else
    raises ``ImproperlyConfigured`` naming the allowed values."""
    value = env_str(name, default).strip().lower() or default
    if value not in choices:
        allowed = ", ".join(choices)
        raise ImproperlyConfigured(f"{name} must be one of {allowed}, got {value!r}")
    return value


def weak_secret_key(key: str, development_key: str) -> str:
    """Why ``key`` is unfit for production ("" when it is fit): missing, the built-in
    development key, or weak by the rules of Django's ``security.W009`` check."""
    # Django's own thresholds, so a key accepted here never makes check --deploy warn.
    from django.core.checks.security.base import (
        SECRET_KEY_INSECURE_PREFIX,
        SECRET_KEY_MIN_LENGTH,
        SECRET_KEY_MIN_UNIQUE_CHARACTERS,
    )

    if not key:
        return "must be set with LOCKSTEP_ENV=production"
    if key == development_key:
        return "must not be the built-in development key with LOCKSTEP_ENV=production"
    if (
        len(key) < SECRET_KEY_MIN_LENGTH
        or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
        or key.startswith(SECRET_KEY_INSECURE_PREFIX)
    ):
        return (
            f"is too weak for LOCKSTEP_ENV=production: use at least {SECRET_KEY_MIN_LENGTH} "
            f"random characters (e.g. python -c 'import secrets; "
            f"print(secrets.token_urlsafe(50))')"
        )
    return ""


def analytics_uri(value: str, base_dir: Path) -> str:
    """The analytics data location: a URI with a scheme (``file://``, ``hdfs://``,
    ``s3a://``, …) is kept exactly as given; a plain path becomes an absolute local path
    (relative ones from ``base_dir``)."""
    value = value.strip()
    if not value:
        raise ImproperlyConfigured("LOCKSTEP_ANALYTICS_URI must not be empty")
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+://", value):
        return value
    return str((base_dir / value).resolve())


def nightly_at(value: str) -> tuple[int, int]:
    """``HH:MM`` (UTC, 24-hour) → (hour, minute); anything else is refused."""
    match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", value)
    if not match or int(match[1]) > 23 or int(match[2]) > 59:
        raise ImproperlyConfigured(
            f"LOCKSTEP_ANALYTICS_NIGHTLY_AT must be HH:MM (UTC, 00:00-23:59), got {value!r}"
        )
    return int(match[1]), int(match[2])


def spark_conf(value: str) -> dict[str, str]:
    """``key=value,key=value`` → a dict; a pair without ``=`` or an empty key is refused."""
    conf: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in value.split(","))):
        key, sep, val = pair.partition("=")
        if not sep or not key.strip():
            raise ImproperlyConfigured(
                f"LOCKSTEP_SPARK_CONF must be key=value pairs separated by commas, got {pair!r}"
            )
        conf[key.strip()] = val.strip()
    return conf


def side_redis_urls(redis_url: str, broker_url: str, channels_url: str) -> tuple[str, str]:
    """Celery's broker URL and the channel layer's Redis URL: each defaults to
    ``redis_url`` (the Redis holding Lockstep's data). When that is a Redis Cluster
    (``workers.connection.is_cluster``), both must be given and name a standalone Redis:
    neither Celery's Redis transport nor channels-redis speaks the cluster protocol, so a
    default would fail later, in every task and every push, rather than here. The URLs
    are left out of the messages (they may carry a password)."""
    broker_url, channels_url = broker_url.strip(), channels_url.strip()
    if _loud(is_cluster, redis_url):
        missing = [
            name
            for name, value in (
                ("CELERY_BROKER_URL", broker_url),
                ("CHANNELS_REDIS_URL", channels_url),
            )
            if not value
        ]
        if missing:
            raise ImproperlyConfigured(
                f"REDIS_URL names a Redis Cluster: set {' and '.join(missing)} to a standalone "
                "Redis (redis://…), because neither Celery's Redis transport nor the channel "
                "layer (channels-redis) speaks the cluster protocol"
            )
    for name, value in (("CELERY_BROKER_URL", broker_url), ("CHANNELS_REDIS_URL", channels_url)):
        if urlsplit(value).scheme.lower() in CLUSTER_SCHEMES or (
            value and value == redis_url and _loud(is_cluster, redis_url)
        ):
            raise ImproperlyConfigured(
                f"{name} must name a standalone Redis, not a Redis Cluster: neither Celery's "
                "Redis transport nor the channel layer (channels-redis) speaks the cluster "
                "protocol"
            )
    return broker_url or redis_url, channels_url or redis_url
