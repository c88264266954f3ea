"""The dashboard's Celery tasks (beat's periodic ones and those the web side queues) go to
a queue of their own, ``LOCKSTEP_CELERY_QUEUE`` (``lockstep``), and its worker consumes
only that one: the workers of the system it runs beside listen on Celery's ``celery``
queue of the same broker and would take them and drop them as unregistered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# Imported at collection, so their tasks are registered with the Celery app before the
# suite's session fixture closes the app (``Celery.close`` takes it off the active apps a
# task module imported later would be registered with).
import lockstep.dashboard.deadletters.tasks
import lockstep.dashboard.monitor.tasks
import lockstep.dashboard.reports.tasks  # noqa: F401
from lockstep.dashboard.celery import app
from tests.dashboard.settings_probe import Refused, read_settings

QUEUE = "settings.LOCKSTEP_CELERY_QUEUE"
DEFAULT = "settings.CELERY_TASK_DEFAULT_QUEUE"
ANALYTICS = "settings.LOCKSTEP_ANALYTICS_CELERY_QUEUE"
# Sent to their own queue, which only the analytics worker consumes (Spark runs).
ANALYTICS_TASKS = (
    "lockstep.dashboard.reports.tasks.run_nightly_analytics",
    "lockstep.dashboard.reports.tasks.run_requested_analytics",
)
# Queued by the web side: bulk replays and discards, and "run now" of the analytics.
WEB_TASKS = (
    "lockstep.dashboard.deadletters.tasks.run_action",
    "lockstep.dashboard.reports.tasks.run_requested_analytics",
)


def test_it_names_the_queue_lockstep_unless_told_otherwise(tmp_path: Path) -> None:
    assert read_settings(tmp_path, [QUEUE, DEFAULT]) == {QUEUE: "lockstep", DEFAULT: "lockstep"}
    told = read_settings(tmp_path, [QUEUE, DEFAULT], LOCKSTEP_CELERY_QUEUE="ops.lockstep")
    assert told == {QUEUE: "ops.lockstep", DEFAULT: "ops.lockstep"}


def test_it_refuses_a_queue_name_that_is_not_a_plain_name(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="LOCKSTEP_CELERY_QUEUE must be a queue name"):
        read_settings(tmp_path, [QUEUE], LOCKSTEP_CELERY_QUEUE="lock step")


def test_it_routes_every_scheduled_and_every_web_task_to_that_queue(settings: Any) -> None:
    scheduled = [(e["task"], e.get("options", {})) for e in settings.CELERY_BEAT_SCHEDULE.values()]
    sent = scheduled + [(name, {}) for name in WEB_TASKS]

    routed = {
        name: app.amqp.router.route(dict(options), name)["queue"].name for name, options in sent
    }

    assert [name for name, _ in sent if name not in app.tasks] == []
    analytics = {name for name in routed if name in ANALYTICS_TASKS}
    assert analytics == set(ANALYTICS_TASKS)
    assert {routed[name] for name in analytics} == {settings.LOCKSTEP_ANALYTICS_CELERY_QUEUE}
    assert {q for name, q in routed.items() if name not in analytics} == {
        settings.LOCKSTEP_CELERY_QUEUE
    }


def test_the_analytics_queue_is_named_after_the_dashboards_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    told = read_settings(tmp_path, [ANALYTICS], LOCKSTEP_CELERY_QUEUE="ops.lockstep")
    assert told == {ANALYTICS: "ops.lockstep.analytics"}
    named = read_settings(tmp_path, [ANALYTICS], LOCKSTEP_ANALYTICS_CELERY_QUEUE="spark")
    assert named == {ANALYTICS: "spark"}


def test_its_worker_consumes_only_that_queue(settings: Any) -> None:
    # What a worker started without -Q consumes (lockstep worker passes none); routing a
    # task to the analytics queue declares that one in the sending process only.
    consumed = [q for q in app.amqp.queues if q != settings.LOCKSTEP_ANALYTICS_CELERY_QUEUE]
    assert consumed == [settings.LOCKSTEP_CELERY_QUEUE]
