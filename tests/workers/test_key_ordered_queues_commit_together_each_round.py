"""Key ordering's periodic commits go for all of a subscription's queues in one round
(``Commits``, docs/lanes.md §5): each queue's commit is still fenced and handled on its
own, a queue whose commit lock is busy waits for the next round, and every lock taken for
the round is given back."""

from __future__ import annotations

import threading

import redis

from lockstep.workers.broker import Broker, Commit, CommitOutcome, CommitResult
from lockstep.workers.ordering.commits import Commits
from lockstep.workers.refs import QueueRef

GROUP, OWNER = "billing", "consumer-a"


class Queue:
    """A queue as ``Commits`` sees it: its commit lock and what it would commit."""

    def __init__(self, ref: QueueRef, token: int, offset: int) -> None:
        self.ref, self.token, self.offset = ref, token, offset
        self.lock = threading.Lock()
        self.results: list[CommitResult | Exception] = []

    def commit_snapshot(self) -> Commit | None:
        if not self.lock.acquire(blocking=False):
            return None
        return Commit(self.ref, GROUP, OWNER, self.token, self.offset, f"{self.offset + 2}-3")

    def commit_done(self, commit: Commit, result: CommitResult | Exception) -> None:
        self.results.append(result)
        self.lock.release()


def _commits(broker: Broker, queues: list[Queue]) -> Commits:
    commits = Commits(broker, 60.0, "test")
    for queue in queues:
        commits.add(queue)
    return commits


def _stored(client: redis.Redis, ref: QueueRef) -> tuple[int, str]:
    stored = Broker(client).read_offset(ref, GROUP)
    return stored.committed, stored.completed


def test_each_queue_commits_fenced_on_its_own_in_one_round(
    redis_on_either: redis.Redis,
) -> None:
    client = redis_on_either
    broker = Broker(client)
    refs = [QueueRef("orders-commits", q) for q in range(6)]
    tokens = {g.ref: g.token for g in broker.lock_batch(refs, GROUP, OWNER, 30.0)}
    queues = [Queue(ref, tokens[ref], 10 + ref.queue) for ref in refs]
    queues[1].token += 7  # a stale token: refused, and only this queue's commit
    queues[2].lock.acquire()  # a lane is writing for this one: left for the next round

    commits = _commits(broker, queues)
    sent = commits.commit_round()

    assert sent == 5
    for queue in (queues[0], *queues[3:]):
        assert queue.results == [CommitResult(CommitOutcome.OK, queue.token)]
        assert _stored(client, queue.ref) == (queue.offset, f"{queue.offset + 2}-3")
    refused = queues[1].results
    assert len(refused) == 1 and isinstance(refused[0], CommitResult)
    assert refused[0].outcome is CommitOutcome.FENCED
    assert _stored(client, queues[1].ref) == (0, "")
    assert queues[2].results == [] and _stored(client, queues[2].ref) == (0, "")
    assert all(not q.lock.locked() for i, q in enumerate(queues) if i != 2)

    queues[2].lock.release()
    assert commits.commit_round() == 6
    assert _stored(client, queues[2].ref) == (12, "14-3")


def test_a_round_that_cannot_reach_redis_gives_every_queue_the_error(
    dead_redis_url: str,
) -> None:
    broker = Broker(redis.Redis.from_url(dead_redis_url, socket_connect_timeout=0.2))
    queues = [Queue(QueueRef("orders-commits", q), 1, 5) for q in range(3)]

    assert _commits(broker, queues).commit_round() == 3

    for queue in queues:
        assert len(queue.results) == 1 and isinstance(queue.results[0], redis.ConnectionError)
        assert not queue.lock.locked()
