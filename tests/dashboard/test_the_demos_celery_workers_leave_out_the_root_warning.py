"""The demo's Celery workers (``LOCKSTEP_DEMO``) leave out Celery's warning about running as
root, which the demo does in most containers; any other dashboard still gives it
(dashboard/celery.py). Celery sends ``celeryd_init`` just before it checks the user."""

from __future__ import annotations

import warnings
from typing import Any

from celery import signals
from celery.exceptions import SecurityWarning
from celery.platforms import ROOT_DISCOURAGED  # type: ignore[attr-defined]  # not in the stubs

# Importing the app connects its receiver, as in a worker.
from lockstep.dashboard.celery import ROOT_WARNING


def _root_warnings_of_a_starting_worker() -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        signals.celeryd_init.send(sender="lockstep@test", instance=None, conf=None, options={})
        # What celery.platforms.check_privileges warns when the worker runs as root.
        warnings.warn(
            SecurityWarning(ROOT_DISCOURAGED.format(uid=0, euid=0, gid=0, egid=0)), stacklevel=1
        )
    return [str(w.message) for w in caught if issubclass(w.category, SecurityWarning)]


def test_the_demos_worker_leaves_out_the_root_warning(settings: Any) -> None:
    settings.LOCKSTEP_DEMO = True

    assert _root_warnings_of_a_starting_worker() == []


def test_another_dashboards_worker_keeps_it(settings: Any) -> None:
    settings.LOCKSTEP_DEMO = False

    [warning] = _root_warnings_of_a_starting_worker()
    assert warning.startswith(ROOT_WARNING)
