import importlib.util
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

BENCHMARKS = (
    "runtime",
    "ordering",
    "dashboard",
    "deadletters",
    "storage",
    "soak",
    "analytics",
    "rebalance",
    "ordering-cluster",
    "manyqueues",
    "ingest",
    "fleet",
)


class Command(BaseCommand):
    help = (
        "Run a benchmark on a private redis-server (analytics: on a synthetic day of the "
        "analytics data set) and print its results as JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=BENCHMARKS)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--messages",
            type=int,
            default=None,
            help="runtime: messages per run (20,000); ordering: messages "
            "of the no-op cases (60,000); ordering-cluster: the same on standalone Redis "
            "and on a local Redis Cluster (20,000); dashboard: messages per "
            "events on/off run (200,000); deadletters: dead letters in the "
            "group (100,000); storage: messages per run (6,000); manyqueues: messages "
            "of the busy phase (40,960)",
        )
        parser.add_argument(
            "--repeats",
            type=int,
            default=None,
            help="runs per case, medians reported (runtime 3, ordering 5, ordering-cluster 3, "
            "dashboard 5 of each of on and off, deadletters 15 requests per filter, "
            "analytics 3 of the job and of the bare aggregation; rebalance: remove/add "
            "cycles of the full configuration, 1; manyqueues: busy phases of each "
            "process, 3; ingest: rounds per store and ingester count, 3)",
        )
        parser.add_argument(
            "--rate",
            type=float,
            default=None,
            help="storage: messages produced per second (200); fleet: the same (1,000)",
        )
        parser.add_argument(
            "--commit-event-interval",
            type=float,
            default=None,
            help="storage: run only this LOCKSTEP_COMMIT_EVENT_INTERVAL (s) instead of "
            "before (0.1) and after (the default)",
        )
        parser.add_argument(
            "--minutes",
            type=float,
            default=None,
            help="soak: minutes at half the maximum consume rate (30); fleet: minutes of the "
            "live phase (2)",
        )
        parser.add_argument(
            "--idle-seconds",
            type=float,
            default=None,
            help="manyqueues: how long every queue stays idle while commands are counted (30)",
        )
        parser.add_argument(
            "--events",
            type=int,
            default=None,
            help="analytics: rows of the synthetic day, messages, events and samples "
            "together (10,000,000); ingest: events stored per round (60,000)",
        )
        parser.add_argument(
            "--ingesters",
            type=int,
            choices=(1, 2),
            action="append",
            default=None,
            help="ingest: ingester processes per round, 1 or 2 (repeatable; default both, "
            "rounds alternating, and their ratio)",
        )
        parser.add_argument(
            "--store",
            choices=("sqlite", "postgres"),
            action="append",
            default=None,
            help="ingest: the database, sqlite or postgres (a private server: initdb and "
            "pg_ctl on a free port; repeatable; default both)",
        )
        parser.add_argument(
            "--uri",
            default=None,
            help="analytics: write the day under this data location and keep it (default: "
            "a temporary folder, removed afterwards)",
        )
        parser.add_argument("--master", default=None, help="analytics: Spark master URL (local[*])")
        parser.add_argument(
            "--consumers",
            type=int,
            default=None,
            help="rebalance: consumers in the full configuration (200; at least 4); fleet: "
            "lockstep consume processes, spread over the groups (16)",
        )
        parser.add_argument(
            "--queues",
            type=int,
            default=None,
            help="rebalance: queues of the topic in the full configuration (1024; at least 4); "
            "manyqueues: queues the one consumer owns (1024); fleet: queues per topic (1024)",
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=None,
            help="rebalance: processes the consumers are spread over "
            "(BENCH_REBALANCE_PROCESSES, else 4)",
        )
        parser.add_argument(
            "--idle-workers",
            action="store_true",
            help="rebalance: queue workers that wait for their drop without reading, a "
            "thread each (before issue #26); by default the real workers read their "
            "streams on each consumer's pool",
        )
        parser.add_argument("--topics", type=int, default=4, help="fleet: topics of the fleet (4)")
        parser.add_argument(
            "--groups-per-topic", type=int, default=4, help="fleet: groups per topic (4)"
        )
        parser.add_argument(
            "--storm-minutes",
            type=float,
            default=5.0,
            help="fleet: minutes notifications are counted after a whole group dies (5)",
        )
        parser.add_argument(
            "--browsers",
            type=int,
            default=5,
            help="fleet: overview sockets open while the web server's CPU is measured (5)",
        )
        parser.add_argument(
            "--cluster",
            action="store_true",
            help="manyqueues: on a private local Redis Cluster of 3 masters (figures per node)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        _require_a_source_checkout()
        messages = options["messages"]
        if messages is not None and messages < 100:
            raise CommandError("--messages must be at least 100")
        repeats = options["repeats"]
        if repeats is not None and repeats < 1:
            raise CommandError("--repeats must be at least 1")
        if options["name"] == "analytics":
            result = _analytics(options)
        elif options["name"] == "rebalance":
            result = _rebalance(options)
        elif options["name"] in ("storage", "soak"):
            result = _storage_or_soak(options)
        elif options["name"] == "deadletters":
            from bench import deadletters

            result = deadletters.run(messages or 100_000, repeats or 15)
        elif options["name"] == "dashboard":
            from bench import dashboard

            result = dashboard.run(messages or 200_000, repeats or 5)
        elif options["name"] == "ordering":
            from bench import ordering

            result = ordering.run(messages or 60_000, repeats or 5)
        elif options["name"] == "manyqueues":
            result = _manyqueues(options)
        elif options["name"] == "ingest":
            result = _ingest(options)
        elif options["name"] == "fleet":
            result = _fleet(options)
        elif options["name"] == "ordering-cluster":
            from bench import ordering_cluster

            result = ordering_cluster.run(noop_messages=messages or 20_000, repeats=repeats or 3)
        else:
            from bench import runtime

            result = runtime.run(messages or 20_000, repeats or 3)
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for k, v in result.items():
                self.stdout.write(f"{k}: {v}")


def _require_a_source_checkout() -> None:
    """The benchmarks live in the repository's ``bench/``, which the wheel does not ship
    (docs/packaging.md): an installed Lockstep says so instead of failing on an import."""
    if importlib.util.find_spec("bench") is None:
        raise CommandError(
            "benchmarks run from a source checkout of Lockstep (bench/ is not installed "
            "with the package): in the checkout, `make setup-test`, then "
            "`.venv/bin/python manage.py benchmark NAME`"
        )


def _storage_or_soak(options: dict[str, Any]) -> dict[str, Any]:
    if options["name"] == "soak":
        from bench import soak

        minutes = options["minutes"] if options["minutes"] is not None else 30.0
        if minutes <= 0:
            raise CommandError("--minutes must be positive")
        return soak.run(minutes)
    from bench import storage

    rate = options["rate"] if options["rate"] is not None else 200.0
    interval = options["commit_event_interval"]
    if rate <= 0:
        raise CommandError("--rate must be positive")
    if interval is not None and interval < 0:
        raise CommandError("--commit-event-interval must be at least 0")
    return storage.run(options["messages"] or 6000, rate, interval)


def _manyqueues(options: dict[str, Any]) -> dict[str, Any]:
    from bench import manyqueues

    queues = options["queues"] if options["queues"] is not None else 1024
    if queues < 1:
        raise CommandError("--queues must be at least 1")
    idle_s = options["idle_seconds"] if options["idle_seconds"] is not None else 30.0
    if idle_s <= 0:
        raise CommandError("--idle-seconds must be positive")
    messages = options["messages"] or manyqueues.BUSY_MESSAGES
    return manyqueues.run(
        queues,
        idle_s=idle_s,
        busy_messages=messages,
        busy_rounds=options["repeats"] or manyqueues.BUSY_ROUNDS,
        cluster=options["cluster"],
    )


def _ingest(options: dict[str, Any]) -> dict[str, Any]:
    from bench import ingest

    events = options["events"] if options["events"] is not None else ingest.DEFAULT_EVENTS
    if events < 1000:
        raise CommandError("--events must be at least 1000")
    return ingest.run(
        events,
        ingesters=sorted(set(options["ingesters"] or (1, 2))),
        stores=list(dict.fromkeys(options["store"] or ("sqlite", "postgres"))),
        repeats=options["repeats"] or 3,
    )


def _fleet(options: dict[str, Any]) -> dict[str, Any]:
    from bench import fleet

    values = {
        "topics": options["topics"],
        "queues": options["queues"] if options["queues"] is not None else 1024,
        "groups_per_topic": options["groups_per_topic"],
        "consumers": options["consumers"] if options["consumers"] is not None else 16,
    }
    for name, value in values.items():
        if value < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be at least 1")
    if values["consumers"] < values["topics"] * values["groups_per_topic"]:
        raise CommandError("--consumers must be at least topics x groups-per-topic")
    rate = options["rate"] if options["rate"] is not None else 1000.0
    if rate <= 0:
        raise CommandError("--rate must be positive")
    return fleet.run(
        **values,
        rate=rate,
        store=(options["store"] or ["sqlite"])[-1],
        ingesters=(options["ingesters"] or [1])[-1],
        rounds=options["repeats"] or 3,
        minutes=options["minutes"] if options["minutes"] is not None else 2.0,
        storm_minutes=options["storm_minutes"],
        browsers=options["browsers"],
    )


def _rebalance(options: dict[str, Any]) -> dict[str, Any]:
    from bench import rebalance

    consumers = options["consumers"] if options["consumers"] is not None else 200
    queues = options["queues"] if options["queues"] is not None else 1024
    # A quarter of each must be at least one: the smaller configurations divide by four.
    if consumers < 4:
        raise CommandError("--consumers must be at least 4")
    if queues < 4:
        raise CommandError("--queues must be at least 4")
    processes = options["processes"]
    if processes is not None and processes < 1:
        raise CommandError("--processes must be at least 1")
    return rebalance.run(
        consumers,
        queues,
        options["repeats"] or 1,
        processes,
        real_workers=not options["idle_workers"],
    )


def _analytics(options: dict[str, Any]) -> dict[str, Any]:
    from bench import analytics
    from lockstep.dashboard.reports.spark import job_options, session_options

    events = options["events"] if options["events"] is not None else analytics.DEFAULT_EVENTS
    if events < analytics.MIN_ROWS:
        raise CommandError(f"--events must be at least {analytics.MIN_ROWS}")
    try:
        return analytics.run(
            events,
            options["uri"],
            options["repeats"] or 3,
            options["master"] or "local[*]",
            session_options(),
            job_options(),
        )
    except analytics.LocationInUse as exc:
        raise CommandError(str(exc)) from exc
