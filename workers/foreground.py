"""One ordered consumer in the foreground, without Django: ``lockstep consume``, and
``manage.py consume`` with the same options (docs/architecture.md).

It consumes until SIGINT or SIGTERM, then stops the way ``Consumer.stop`` promises: each
queue finishes its message in progress, commits and is unlocked.
"""

import argparse
import signal
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from lockstep.workers.config import AfterDlq, Model, Ordering, Subscription
from lockstep.workers.consumer import Consumer
from lockstep.workers.handlers import import_handler

# How often the main thread wakes while it waits for SIGTERM or SIGINT (run_until_signalled).
SIGNAL_CHECK_S = 0.5


class Output(Protocol):
    """Where the command says it started and stopped (stdout, Django's ``OutputWrapper``)."""

    def write(self, text: str, /) -> Any: ...

    def flush(self) -> Any: ...


def add_consume_arguments(parser: argparse.ArgumentParser) -> None:
    """The subscription's options (Django's command parser is an ``ArgumentParser`` too)."""
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--handler", required=True, help="dotted path to the handler")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument(
        "--max-reconsume-times",
        type=int,
        default=-1,
        help="-1 = unbounded (RocketMQ's orderly default)",
    )
    parser.add_argument("--suspend-ms", type=int, default=1000)
    parser.add_argument("--model", choices=[m.value for m in Model], default=Model.CLUSTERING.value)
    parser.add_argument("--consumer-id", default="", help="defaults to host@pid@random")
    parser.add_argument("--consumer-name", default="", help="stable name for broadcasting offsets")
    parser.add_argument("--no-events", action="store_true", help="do not emit events")
    parser.add_argument(
        "--ordering", choices=[o.value for o in Ordering], default=Ordering.QUEUE.value
    )
    parser.add_argument("--lanes", type=int, default=16, help="key ordering: lanes")
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=1000,
        help="key ordering: pause pulling a queue above this",
    )
    parser.add_argument(
        "--after-dlq", choices=[a.value for a in AfterDlq], default=AfterDlq.CONTINUE.value
    )
    parser.add_argument("--retry-initial-ms", type=int, default=1000)
    parser.add_argument("--retry-factor", type=float, default=2.0)
    parser.add_argument("--retry-max-ms", type=int, default=30_000)
    parser.add_argument(
        "--flush-interval-ms",
        type=int,
        default=500,
        help="key ordering: how often offsets are committed",
    )
    parser.add_argument(
        "--commit-interval-ms",
        type=int,
        default=200,
        help="queue ordering: how often the handled position is committed (0: every batch)",
    )


def consumer_from_options(redis_url: str, options: Mapping[str, Any]) -> Consumer:
    """A consumer of the one subscription the options describe, its handler imported.
    Raises ``LockstepError`` (a ``ConfigurationError``) for one it could never run."""
    sub = Subscription(
        topic=options["topic"],
        group=options["group"],
        handler=options["handler"],
        batch_size=options["batch_size"],
        max_reconsume_times=options["max_reconsume_times"],
        suspend_ms=options["suspend_ms"],
        model=Model(options["model"]),
        consumer_name=options["consumer_name"],
        ordering=Ordering(options["ordering"]),
        lanes=options["lanes"],
        max_in_flight=options["max_in_flight"],
        after_dlq=AfterDlq(options["after_dlq"]),
        retry_initial_ms=options["retry_initial_ms"],
        retry_factor=options["retry_factor"],
        retry_max_ms=options["retry_max_ms"],
        flush_interval_ms=options["flush_interval_ms"],
        commit_interval_ms=options["commit_interval_ms"],
    )
    import_handler(sub.handler)
    return Consumer(
        redis_url,
        [sub],
        consumer_id=options["consumer_id"] or None,
        events_enabled=not options["no_events"],
    )


def run_until_signalled(consumer: Consumer, out: Output) -> None:
    """Start ``consumer``, say so on ``out``, and stop it at SIGINT or SIGTERM. Must run
    in the main thread (signal handlers)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    consumer.start()
    for sub in consumer.subscriptions:
        out.write(f"consumer {consumer.consumer_id} consuming {sub.topic} as {sub.group}\n")
    out.flush()
    # The kernel may hand SIGTERM to any of the consumer's threads; Python then runs the
    # handler only when the main thread next runs Python code, which an untimed wait
    # does not do while it blocks (a consumer on a cluster was once found still waiting
    # here 30 s after its SIGTERM). Hence a timed wait.
    while not stop.wait(SIGNAL_CHECK_S):
        pass
    consumer.stop()
    out.write("stopped\n")
    out.flush()
