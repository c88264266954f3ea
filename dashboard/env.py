"""Typed settings helpers for Django: the runtime's helpers, re-raised as
``ImproperlyConfigured`` so a bad value stops the web side at start-up."""

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

from workers import env as runtime_env
from workers.errors import ConfigurationError

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
