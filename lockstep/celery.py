"""Ordered consumers inside any Celery worker (docs/api.md, "Consume in your Celery app").

::

    from celery import Celery

    import lockstep.celery
    from lockstep import ConsumeStatus, Subscription

    app = Celery("proj", broker="redis://localhost:6379/0")

    def on_order(messages, ctx):
        for m in messages:
            ...
        return ConsumeStatus.SUCCESS

    lockstep.celery.install(
        app,
        redis_url="redis://localhost:6379/1",
        subscriptions=[Subscription("orders", "billing", handler=on_order, ordering="key")],
    )

Every ``celery -A proj worker`` then runs one Lockstep consumer in its main process
beside the app's own tasks. Importing this module imports Celery (the host's own, or
``pip install "lockstep[celery]"``); ``import lockstep`` never does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

try:
    from celery import Celery
except ImportError as exc:  # the runtime alone does not depend on Celery
    raise ImportError(
        'lockstep.celery needs Celery: pip install "lockstep[celery]" (or your own Celery)'
    ) from exc

from lockstep.workers.bootstep import LockstepConsumers, configured_step
from lockstep.workers.config import Subscription, Timings
from lockstep.workers.config import redis_url as redis_url_from_env
from lockstep.workers.errors import ConfigurationError

Subscriptions = Sequence[Subscription] | Callable[[], Sequence[Subscription]]

__all__ = ["install"]


def install(
    app: Celery,
    *,
    subscriptions: Subscriptions,
    redis_url: str | Callable[[], str] | None = None,
    timings: Timings | Callable[[], Timings] | None = None,
) -> type[LockstepConsumers]:
    """Add ordered consumers to ``app``'s workers; returns the bootstep class it added.

    - ``subscriptions``: a list of ``Subscription``, checked now, or a callable returning
      one, called when a worker starts (settings that load lazily). An empty list runs no
      consumer.
    - ``redis_url``: the Redis holding Lockstep's topics (it may differ from the broker):
      a URL, a callable returning one (called at worker start), or None for the
      environment variable ``REDIS_URL`` read at worker start.
    - ``timings``: a ``Timings`` (or a callable returning one); None reads the
      ``LOCKSTEP_*`` timing variables at worker start.

    Only ``celery worker`` processes consume (not beat, not producers): one consumer in
    the worker's main process for all subscriptions, started after the pool and stopped
    gracefully before the worker exits (SIGTERM: each queue finishes its message, commits
    and is unlocked). A bad setting found at start-up (no ``REDIS_URL``, a bad
    subscription from the callable) stops the worker from starting.

    Installing on an app that already has Lockstep consumers (by this function or by
    adding ``LockstepConsumers`` yourself) raises ``ConfigurationError``: two consumers in
    one worker would compete for the same queues, and silently keeping one of two
    different configurations would hide a mistake.
    """
    if any(_is_lockstep_step(step) for step in app.steps["worker"]):
        raise ConfigurationError(f"Lockstep consumers are already installed on Celery app {app}")
    step = configured_step(
        _subscriptions_source(subscriptions),
        _url_source(redis_url),
        _timings_source(timings),
    )
    app.steps["worker"].add(step)
    return step


def _is_lockstep_step(step: object) -> bool:
    return isinstance(step, type) and issubclass(step, LockstepConsumers)


def _subscriptions_source(given: Subscriptions) -> Callable[[], Sequence[Subscription]]:
    """A callable is asked at worker start (and checked then); a list is checked now."""
    if callable(given):
        return lambda: _checked(given())
    fixed = _checked(given)
    return lambda: fixed


def _checked(subscriptions: object) -> list[Subscription]:
    if isinstance(subscriptions, str | bytes) or not isinstance(subscriptions, Sequence):
        raise ConfigurationError(
            f"subscriptions must be a list of lockstep.Subscription, got {subscriptions!r}"
        )
    wrong = [s for s in subscriptions if not isinstance(s, Subscription)]
    if wrong:
        raise ConfigurationError(
            f"subscriptions must be lockstep.Subscription objects, got {wrong[0]!r}"
        )
    return list(subscriptions)


def _url_source(given: str | Callable[[], str] | None) -> Callable[[], str]:
    if given is None:
        return redis_url_from_env
    if callable(given):
        return given
    if not given.strip():
        raise ConfigurationError("redis_url is empty (e.g. redis://127.0.0.1:6379/0)")
    return lambda: given


def _timings_source(given: Timings | Callable[[], Timings] | None) -> Callable[[], Timings | None]:
    if given is None or isinstance(given, Timings):
        validated = given.validate() if given is not None else None
        return lambda: validated
    return given
