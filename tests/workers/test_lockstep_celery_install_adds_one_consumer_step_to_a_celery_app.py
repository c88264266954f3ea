"""``lockstep.celery.install``: one ``LockstepConsumers`` step on the app's worker
blueprint, its settings checked at install or read when the worker starts, and a second
install on the same app refused. (A real worker runs it in
test_a_plain_celery_app_embeds_ordered_consumers_with_lockstep_celery_install.py.)"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from celery import Celery

import lockstep.celery
from lockstep import ConfigurationError, ConsumeContext, ConsumeStatus, Message, Subscription
from lockstep.workers.bootstep import LockstepConsumers, configured_step
from lockstep.workers.config import Timings

ROOT = Path(__file__).resolve().parents[2]


def settle(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    return ConsumeStatus.SUCCESS


SUB = Subscription("orders", "billing", handler=settle, ordering="key")


def _app() -> Celery:
    return Celery("shop", set_as_current=False)


def _lockstep_steps(app: Celery) -> list[type[LockstepConsumers]]:
    return [s for s in app.steps["worker"] if issubclass(s, LockstepConsumers)]


def test_it_adds_one_step_that_gives_the_worker_what_was_installed() -> None:
    app = _app()
    timings = Timings(lock_ttl_s=3.0, client_lock_expiry_s=2.0, lock_renew_interval_s=0.5)

    step = lockstep.celery.install(
        app, redis_url="redis://127.0.0.1:1/0", subscriptions=[SUB], timings=timings
    )

    assert _lockstep_steps(app) == [step]
    bound = step(None)
    assert bound.subscriptions() == [SUB]
    assert bound.redis_url() == "redis://127.0.0.1:1/0"
    assert bound.timings() == timings


def test_it_reads_redis_url_and_callable_subscriptions_when_the_worker_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings: list[Subscription] = []
    step = lockstep.celery.install(_app(), subscriptions=lambda: settings)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:2/0")
    settings.append(SUB)

    bound = step(None)
    assert bound.subscriptions() == [SUB]
    assert bound.redis_url() == "redis://127.0.0.1:2/0"
    assert bound.timings() is None  # the LOCKSTEP_* variables, read by the consumer


def test_it_refuses_a_second_install_on_the_same_app() -> None:
    app = _app()
    lockstep.celery.install(app, subscriptions=[SUB])

    with pytest.raises(ConfigurationError, match="already installed"):
        lockstep.celery.install(app, subscriptions=[SUB])
    assert len(_lockstep_steps(app)) == 1


def test_it_refuses_an_app_that_already_has_a_step_added_by_hand() -> None:
    app = _app()
    app.steps["worker"].add(configured_step(lambda: [SUB]))

    with pytest.raises(ConfigurationError, match="already installed"):
        lockstep.celery.install(app, subscriptions=[SUB])


def test_it_refuses_what_is_not_a_subscription_at_install() -> None:
    with pytest.raises(ConfigurationError, match=r"must be lockstep\.Subscription objects"):
        lockstep.celery.install(_app(), subscriptions=[{"topic": "orders"}])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="must be a list"):
        lockstep.celery.install(_app(), subscriptions="orders")  # type: ignore[arg-type]


def test_a_callable_returning_a_bad_list_fails_when_the_worker_starts() -> None:
    step = lockstep.celery.install(_app(), subscriptions=lambda: [None])  # type: ignore[list-item]

    with pytest.raises(ConfigurationError, match=r"must be lockstep\.Subscription objects"):
        step(None).subscriptions()


def test_importing_lockstep_imports_neither_celery_nor_django() -> None:
    probe = "import sys, lockstep; print(sorted({'celery', 'django'} & set(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
