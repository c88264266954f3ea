"""Celery tasks of the dead letters: copying the runtime's dead letters into the database
(beat), and running an operator's bulk replay or discard."""

from __future__ import annotations

from celery import shared_task

from lockstep.dashboard.deadletters.runner import run
from lockstep.dashboard.deadletters.sync import sync_dead_letters as sync
from lockstep.dashboard.web.redis_conn import get_redis, skipped_during_redis_outage


@shared_task
@skipped_during_redis_outage
def sync_dead_letters() -> int:
    """One bounded sync (``sync.py``); a backlog is caught up over the next ticks.
    Returns how many dead letters were copied (``SKIPPED`` while Redis is unreachable)."""
    return sync(get_redis()).copied


# Acknowledged after it ran: a worker that dies mid-request leaves the message to be
# delivered again (after the broker's visibility timeout), and ``actions.run`` then goes
# on with the items still pending. A second delivery while the first still runs finds the
# request's lease taken and does nothing.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_action(request_id: str) -> str:
    """Run action request ``request_id`` (``runner.run``): only its pending items, at the
    ``LOCKSTEP_REPLAY_RATE_PER_S`` rate. Returns the request's state after ("unknown" for
    an id that was never submitted)."""
    request = run(request_id)
    return request.state if request is not None else "unknown"
