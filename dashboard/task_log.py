"""The INFO lines of the dashboard's frequent Celery tasks, lowered to DEBUG.

For every task it runs, Celery writes INFO lines: beat ``Scheduler: Sending due task NAME
(TASK)``, the worker ``Task TASK[id] received`` and ``Task TASK[id] succeeded in …``. For
the tasks beat sends every few seconds (the dead-letter sync every 2 s, the lag samples
every 10 s, the analytics data every minute) that is thousands of lines an hour, none of
which an operator acts on, and they bury the ones that matter. ``FrequentTasksAtDebug``,
a filter on Celery's loggers (``settings.LOGGING``), turns those INFO records into DEBUG
records: shown with ``LOG_LEVEL=DEBUG`` (``--loglevel DEBUG``), dropped otherwise. A
frequent task's failure (ERROR) and every line of the other tasks stay as they are.

Imports no model: the settings configure logging with it before the apps load.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

# Celery's loggers of those lines: beat's, the worker's "received" and the pool's
# "succeeded" (a filter on a logger sees only the records made on that logger).
CELERY_TASK_LOGGERS = ("celery.beat", "celery.worker.strategy", "celery.app.trace")

# A task beat sends more often than hourly is frequent. The hourly one (pruning) and the
# nightly one (analytics) stay at INFO: 25 lines a day that tell when they ran.
FREQUENT_BELOW_S = 3600.0


def frequent_tasks(schedule: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The tasks of a beat schedule (``CELERY_BEAT_SCHEDULE``) sent at a fixed interval
    shorter than ``FREQUENT_BELOW_S``. A crontab schedule is never frequent here: it runs
    at given times of the day, which is worth a line each."""
    frequent = set()
    for entry in schedule.values():
        every = entry["schedule"]
        seconds = every.total_seconds() if isinstance(every, timedelta) else every
        if isinstance(seconds, int | float) and seconds < FREQUENT_BELOW_S:
            frequent.add(str(entry["task"]))
    return sorted(frequent)


class FrequentTasksAtDebug(logging.Filter):
    """Lowers to DEBUG the INFO records that name one of ``tasks`` among their arguments
    (Celery passes the task's name as an argument of each line above), and drops them
    unless the record's logger is enabled for DEBUG. Other records pass unchanged."""

    def __init__(self, tasks: Iterable[str]) -> None:
        super().__init__()
        self.tasks = frozenset(tasks)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not self._names_a_task(record.args):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)

    def _names_a_task(self, args: object) -> bool:
        values = args.values() if isinstance(args, Mapping) else args
        if not isinstance(values, Iterable) or isinstance(values, str):
            return False
        return any(isinstance(value, str) and value in self.tasks for value in values)
