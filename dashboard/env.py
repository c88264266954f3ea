"""Typed settings helpers for Django: the runtime's helpers, re-raised as
``ImproperlyConfigured`` so a bad value stops the web side at start-up."""

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from lockstep.checkout import stores_line
from lockstep.workers import env as runtime_env
from lockstep.workers.connection import CLUSTER_SCHEMES, is_cluster
from lockstep.workers.errors import ConfigurationError

T = TypeVar("T")
# Set for the processes `lockstep dashboard` supervises: its banner already said which
# Redis and database they use, and each saying it again would only repeat it.
STORES_TOLD_ENV = "LOCKSTEP_STORES_TOLD"


class Output(Protocol):
    def write(self, text: str, /) -> Any: ...


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
    (relative ones from ``base_dir``, the data directory)."""
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


def env_file(named: str, cwd: Path) -> Path | None:
    """The settings file to read before the environment's variables are looked at:
    ``named`` (``LOCKSTEP_ENV_FILE``; relative to ``cwd``) when given, and then it must
    exist; otherwise ``.env`` in the working directory when there is one; else None."""
    if named.strip():
        path = (cwd / Path(named.strip()).expanduser()).resolve()
        if not path.is_file():
            raise ImproperlyConfigured(f"LOCKSTEP_ENV_FILE names {path}, which is not a file")
        return path
    dotenv = cwd / ".env"
    return dotenv if dotenv.is_file() else None


def default_data_dir(environ: Mapping[str, str]) -> Path:
    """Where data goes when ``LOCKSTEP_DATA_DIR`` is unset, as other command-line tools
    do: ``$XDG_DATA_HOME/lockstep``, or ``~/.local/share/lockstep`` (the XDG Base Directory
    default; a relative ``XDG_DATA_HOME`` is ignored, as the specification says)."""
    xdg = environ.get("XDG_DATA_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "lockstep"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no passwd entry (some service managers)
        raise ImproperlyConfigured(
            "LOCKSTEP_DATA_DIR is not set and this user has no home directory: set it"
        ) from None
    return home / ".local" / "share" / "lockstep"


def package_roots(package_dir: Path) -> set[Path]:
    """The folders the installed code lives in: the package, and in a source checkout the
    folders its links point to (``lockstep/dashboard -> ../dashboard``, …)."""
    roots = {package_dir.resolve()}
    if package_dir.is_dir():
        roots |= {child.resolve() for child in package_dir.iterdir() if child.is_symlink()}
    return roots


def data_dir(value: str, package_dir: Path, environ: Mapping[str, str]) -> Path:
    """``LOCKSTEP_DATA_DIR`` as an absolute path (relative ones from the working
    directory; the default from ``default_data_dir`` when empty). A folder inside the
    code (``package_roots``) is refused: an upgrade or a reinstall would delete what is
    kept there. Nothing is created here: reading the settings writes nothing."""
    path = Path(value.strip()).expanduser() if value.strip() else default_data_dir(environ)
    path = path.resolve()
    for root in package_roots(package_dir):
        if path == root or root in path.parents:
            raise ImproperlyConfigured(
                f"LOCKSTEP_DATA_DIR must not be inside the installed package ({root}): "
                f"a reinstall would delete what is kept there; got {path}"
            )
    return path


def celery_queue(value: str, name: str = "LOCKSTEP_CELERY_QUEUE") -> str:
    """A Celery queue of the dashboard's own tasks (the variable ``name``'s value): a
    plain name (letters, digits, ``.``, ``_``, ``-``, ``:``), so it is the same list key
    on every broker."""
    value = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9._:-]+", value):
        raise ImproperlyConfigured(
            f"{name} must be a queue name of letters, digits, '.', '_', '-' or ':', got {value!r}"
        )
    return value


def database_label(database: Mapping[str, Any]) -> str:
    """A database of ``DATABASES`` as its user knows it, without the password: SQLite's
    file, or ``engine://user@host:port/name``."""
    engine = str(database.get("ENGINE", "")).rpartition(".")[2]
    if engine == "sqlite3":
        return f"sqlite3 {database.get('NAME')}"
    user = f"{database['USER']}@" if database.get("USER") else ""
    port = f":{database['PORT']}" if database.get("PORT") else ""
    host = database.get("HOST") or "localhost"
    return f"{engine}://{user}{host}{port}/{database.get('NAME')}"


def tell_stores(out: Output) -> None:
    """Say on ``out`` (stderr: stdout may be a command's JSON) which Redis and which
    database this process acts on, in one line (``checkout.stores_line``); nothing under
    ``lockstep dashboard``, which said it for all its processes."""
    from django.conf import settings

    if os.environ.get(STORES_TOLD_ENV):
        return
    database = database_label(settings.DATABASES["default"])
    out.write(stores_line(settings.REDIS_URL, database) + "\n")
