"""The ``lockstep`` command: the dashboard as a service beside an existing system
(docs/dashboard-service.md).

``lockstep dashboard`` applies the migrations, prints the login URL and supervises one
process per role (honcho's ``Manager``): ``web`` (Daphne), ``ingester`` (``--ingesters N``:
N of them, which split the event streams), ``alerts``, ``worker`` and ``beat``, each of
which is also a subcommand of its own for a one-process-per-role layout (``deploy/``).
``lockstep manage ...`` runs any Django command of the dashboard, so an adopter never
needs the repository's ``manage.py``.
``lockstep consume`` runs one ordered consumer in the foreground with the runtime alone.

Parsing the command line needs only the runtime: ``lockstep --help`` works without the
``[dashboard]`` extra, and a subcommand that needs it says how to install it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from lockstep import checkout

SETTINGS_MODULE = "lockstep.dashboard.settings"
CELERY_APP = "lockstep.dashboard.celery"
ASGI_APP = "lockstep.dashboard.asgi:application"
INSTALL_HINT = "pip install 'lockstep[dashboard]'"
# Importable names of the [dashboard] extra's packages that the processes import first.
DASHBOARD_MODULES = (
    "django",
    "daphne",
    "channels",
    "channels_redis",
    "celery",
    "django_celery_beat",
    "environ",
    "honcho",
    "axes",
)
# The dashboard's default (settings.py): the same server for `lockstep consume`.
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
ROLES = ("web", "ingester", "alerts", "worker", "analytics", "beat")
# Honcho stops the processes with SIGTERM and kills what is left after this long. The
# worker's ordered consumers wait up to LOCKSTEP_SHUTDOWN_TIMEOUT for the messages in
# progress and their offsets: it gets that long, and this much more to unlock and leave.
STOP_MARGIN_S = 10.0
# The demo's topic: its subscriptions' (settings, DEMO_SUBSCRIPTIONS) and its producer's.
DEMO_TOPIC, DEMO_QUEUES = "orders", 8
# Honcho's status after SIGINT / SIGTERM (128 + the signal): a requested stop.
STOPPED_BY_SIGNAL = {130, 143}
# Subcommands whose Django command says itself which Redis and database it uses.
TOLD_BY_THE_COMMAND = frozenset({"manage", "alerts"})


class Unavailable(Exception):
    """The command cannot run here (an extra is missing, a setting is wrong): its message
    is printed as it is, without a traceback."""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # In a source checkout, what a running `make run` runs with (lockstep/checkout.py).
    checkout.read_checkout_run_file()
    if argv[:1] == ["manage"]:
        # Everything after `manage` is Django's, --help included (argparse would take it).
        args = argparse.Namespace(
            command="manage", run=_run_django_command, django_command=[], extra=argv[1:]
        )
    else:
        args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        result: int = args.run(args)
    except Unavailable as exc:
        print(f"lockstep {args.command}: {exc}", file=sys.stderr)
        return 1
    return result


# ---- the parser ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lockstep",
        description="Lockstep's dashboard as a service beside your system "
        "(docs/dashboard-service.md). The runtime itself needs no command: "
        "`from lockstep import Producer, Subscription`.",
    )
    parser.add_argument("--version", action="version", version=f"lockstep {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_dashboard(commands)
    _add_web(commands)
    _add_ingester(commands)
    for name, django_command, summary in (
        ("alerts", ["alerts", "run"], "the alert evaluator and notifier (manage alerts run)"),
        ("migrate", ["migrate", "--noinput"], "create or update the database (manage migrate)"),
    ):
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.add_argument("extra", nargs="*", metavar="OPTION", help="after --: passed on")
        sub.set_defaults(run=_run_django_command, django_command=django_command)
    _add_celery(commands)
    _add_consume(commands)
    # Listed for --help only: main() hands everything after `manage` to Django.
    commands.add_parser(
        "manage", help="any Django command of the dashboard (`lockstep manage help` lists them)"
    )
    return parser


def _add_dashboard(commands: Any) -> None:
    sub = commands.add_parser(
        "dashboard",
        help="migrate, then run every role (web, ingester, alerts, worker, analytics, beat) "
        "supervised",
        description="Apply the migrations, print the login URL, then run the web server, the "
        "event ingester, the alert evaluator, the Celery worker, the analytics worker and "
        "Celery beat until "
        "Ctrl-C or SIGTERM, which stops them all (exit status 0). Settings come from the "
        "environment (docs/dashboard-service.md).",
    )
    _add_bind_options(sub)
    _add_worker_options(sub)
    _add_ingesters_option(sub)
    sub.add_argument(
        "--without",
        action="append",
        choices=ROLES,
        default=[],
        metavar="ROLE",
        help=f"do not start this role (repeatable; one of {', '.join(ROLES)}), e.g. when "
        "it runs elsewhere",
    )
    sub.add_argument("--no-migrate", action="store_true", help="do not apply migrations first")
    sub.add_argument(
        "--demo",
        action="store_true",
        help="also run the demo (LOCKSTEP_DEMO=true): its subscriptions on topic `orders`, "
        "its users and its producer; never beside a real system",
    )
    sub.set_defaults(run=_run_dashboard)


def _add_bind_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    sub.add_argument("--port", type=int, default=8000, help="HTTP port (8000)")
    sub.add_argument(
        "--proxy-headers",
        action="store_true",
        help="behind a reverse proxy: take the client's address from X-Forwarded-For",
    )


def _add_worker_options(sub: argparse.ArgumentParser) -> None:
    """The Celery worker's options, on ``worker`` and on ``dashboard`` (which passes them
    on; its ``--loglevel`` is beat's too)."""
    sub.add_argument("--concurrency", type=int, default=2, help="worker processes (2)")
    sub.add_argument("--loglevel", default="INFO", help="Celery's log level (INFO)")


def _add_ingester(commands: Any) -> None:
    summary = "the event ingester (manage ingest_events)"
    sub = commands.add_parser(
        "ingester",
        help=summary,
        description=f"{summary}. Any number may run, here (--ingesters) or on other "
        "hosts: they split the event streams (LOCKSTEP_EVENT_SHARDS) through leases in "
        "Redis, and a stopped one's streams go to the others (docs/events.md §4). Options "
        "after -- are passed to ingest_events.",
    )
    _add_ingesters_option(sub)
    sub.add_argument("extra", nargs="*", metavar="OPTION", help="after --: passed on")
    sub.set_defaults(run=_run_ingester, django_command=["ingest_events"])


def _add_ingesters_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--ingesters",
        type=_positive_int,
        default=1,
        metavar="N",
        help="event ingester processes (1); they split the event streams, so more than "
        "one needs LOCKSTEP_EVENT_SHARDS of at least as many",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_web(commands: Any) -> None:
    sub = commands.add_parser(
        "web",
        help="the web server (Daphne: pages, JSON API, WebSockets, static files)",
        description="Daphne on lockstep.dashboard.asgi:application; it serves the static "
        "files itself. Options after -- are passed to daphne.",
    )
    _add_bind_options(sub)
    sub.add_argument("extra", nargs="*", metavar="OPTION", help="after --: daphne options")
    sub.set_defaults(run=_run_web)


def _add_celery(commands: Any) -> None:
    worker = commands.add_parser(
        "worker",
        help="the dashboard's Celery worker (its queue only: LOCKSTEP_CELERY_QUEUE)",
        description="celery -A lockstep.dashboard.celery worker: consumes only the "
        "dashboard's queue (LOCKSTEP_CELERY_QUEUE, default `lockstep`) and runs the "
        "subscriptions of LOCKSTEP_SUBSCRIPTIONS. Options after -- are passed to celery.",
    )
    _add_worker_options(worker)
    worker.add_argument(
        "--name", default="lockstep@%h", help="worker node name (lockstep@%%h, %%h: host)"
    )
    worker.add_argument("extra", nargs="*", metavar="OPTION", help="after --: celery options")
    worker.set_defaults(run=_run_worker)
    analytics = commands.add_parser(
        "analytics",
        help="the analytics worker (LOCKSTEP_ANALYTICS_CELERY_QUEUE only: the Spark runs)",
        description="celery -A lockstep.dashboard.celery worker for the analytics runs "
        "alone: consumes only LOCKSTEP_ANALYTICS_CELERY_QUEUE, one run at a time, each in "
        "a child process that exits when the run ends (the Spark JVM and its memory go "
        "with it), and runs no ordered consumer. Options after -- are passed to celery.",
    )
    analytics.add_argument("--loglevel", default="INFO", help="Celery's log level (INFO)")
    analytics.add_argument(
        "--name", default="lockstep-analytics@%h", help="worker node name (%%h: host)"
    )
    analytics.add_argument("extra", nargs="*", metavar="OPTION", help="after --: celery options")
    analytics.set_defaults(run=_run_analytics_worker)
    beat = commands.add_parser(
        "beat",
        help="Celery beat: the dashboard's periodic tasks (run exactly one)",
        description="celery -A lockstep.dashboard.celery beat (schedule kept in the "
        "database). Run exactly one. Options after -- are passed to celery.",
    )
    beat.add_argument("--loglevel", default="INFO", help="log level (INFO)")
    beat.add_argument("extra", nargs="*", metavar="OPTION", help="after --: celery options")
    beat.set_defaults(run=_run_beat)


def _add_consume(commands: Any) -> None:
    from lockstep.workers.foreground import add_consume_arguments

    sub = commands.add_parser(
        "consume",
        help="one ordered consumer in the foreground (the runtime only: no Django)",
        description="Consume a topic in order as one consumer of a group until Ctrl-C or "
        "SIGTERM, which lets each queue finish its message in progress. Needs only the "
        "runtime; REDIS_URL and the LOCKSTEP_* timings come from the environment "
        "(docs/constants.md).",
    )
    sub.add_argument(
        "--redis-url",
        default=None,
        help=f"the runtime's Redis (default: REDIS_URL, else {DEFAULT_REDIS_URL})",
    )
    add_consume_arguments(sub)
    sub.set_defaults(run=_run_consume)


# ---- one role each ---------------------------------------------------------------------


def _run_web(args: argparse.Namespace) -> int:
    _prepare()
    command = [sys.executable, "-m", "daphne", "-b", args.host, "-p", str(args.port)]
    if args.proxy_headers:
        command.append("--proxy-headers")
    _exec([*command, *args.extra, ASGI_APP])


def _run_worker(args: argparse.Namespace) -> int:
    _prepare()
    _exec(
        [
            *(sys.executable, "-m", "celery", "-A", CELERY_APP, "worker"),
            *("--loglevel", args.loglevel, "--concurrency", str(args.concurrency)),
            *("-n", args.name, *args.extra),
        ]
    )


def _run_analytics_worker(args: argparse.Namespace) -> int:
    settings = _prepare()
    # No ordered consumer here: this worker only runs Spark (docs/dashboard-service.md).
    os.environ["LOCKSTEP_SUBSCRIPTIONS"] = "[]"
    _exec(
        [
            *(sys.executable, "-m", "celery", "-A", CELERY_APP, "worker"),
            *("--loglevel", args.loglevel, "-Q", settings.LOCKSTEP_ANALYTICS_CELERY_QUEUE),
            # One run at a time, each in a fresh child that exits after it: the JVM the
            # run started (a child of that process) ends with it and frees its memory.
            *("--pool", "prefork", "--concurrency", "1", "--max-tasks-per-child", "1"),
            *("-n", args.name, *args.extra),
        ]
    )


def _run_beat(args: argparse.Namespace) -> int:
    _prepare()
    command = [sys.executable, "-m", "celery", "-A", CELERY_APP, "beat"]
    _exec([*command, "--loglevel", args.loglevel, *args.extra])


def _run_consume(args: argparse.Namespace) -> int:
    from lockstep.workers.env import env_str
    from lockstep.workers.errors import LockstepError
    from lockstep.workers.foreground import consumer_from_options, run_until_signalled
    from lockstep.workers.redact import MaskUrlsFilter, mask_url

    # As the dashboard's LOGGING (the root logger to stderr, URLs' passwords masked, at
    # LOG_LEVEL), with the time and level a process of its own needs in its log.
    level = env_str("LOG_LEVEL", "INFO").upper()
    handler = logging.StreamHandler()
    handler.addFilter(MaskUrlsFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    try:
        logging.basicConfig(level=level, handlers=[handler])
    except ValueError:
        raise Unavailable(f"configuration error: LOG_LEVEL {level!r} is not a level") from None
    url = args.redis_url or env_str("REDIS_URL", DEFAULT_REDIS_URL)
    print(checkout.stores_line(url), file=sys.stderr, flush=True)
    try:
        consumer = consumer_from_options(url, vars(args))
    except LockstepError as exc:
        raise Unavailable(mask_url(str(exc))) from None
    run_until_signalled(consumer, sys.stdout)
    return 0


def _run_ingester(args: argparse.Namespace) -> int:
    """One ingester in this process, or ``--ingesters`` of them supervised."""
    if args.ingesters == 1:
        return _run_django_command(args)
    _prepare()
    _warn_about_idle_ingesters(args.ingesters)
    me = [sys.executable, "-m", "lockstep", "ingester"]
    passed_on = ["--", *args.extra] if args.extra else []
    processes = {name: [*me, *passed_on] for name in _ingester_names(args.ingesters)}
    return _supervise(processes, "lockstep ingester")


def _ingester_names(count: int) -> list[str]:
    """The supervisor's names of ``count`` ingester processes: ``ingester`` when alone."""
    return ["ingester"] if count == 1 else [f"ingester{i}" for i in range(1, count + 1)]


def _warn_about_idle_ingesters(count: int) -> None:
    """More ingesters than event shards: the extra ones only stand by (each shard is read by
    one ingester; with one shard, ``ls:events``, there is nothing to split)."""
    from lockstep.workers.errors import ConfigurationError
    from lockstep.workers.events import event_shards_from_env

    try:
        shards = event_shards_from_env()
    except ConfigurationError as exc:
        raise Unavailable(f"configuration error: {exc}") from None
    if count > shards:
        print(
            f"lockstep: {count} ingesters for LOCKSTEP_EVENT_SHARDS={shards}: each event "
            f"stream is read by one ingester, so {count - shards} of them only stand by "
            f"(to take over from one that stops); set LOCKSTEP_EVENT_SHARDS={count} or more "
            "to split the work",
            file=sys.stderr,
            flush=True,
        )


def _run_django_command(args: argparse.Namespace) -> int:
    _prepare(tell=args.command not in TOLD_BY_THE_COMMAND)
    from django.core.management import execute_from_command_line

    execute_from_command_line([f"lockstep {args.command}", *args.django_command, *args.extra])
    return 0


def _exec(command: list[str]) -> NoReturn:
    """Become ``command``: the service manager's signals then reach it directly."""
    sys.stdout.flush()
    os.execv(command[0], command)


# ---- the supervised whole --------------------------------------------------------------


def _run_dashboard(args: argparse.Namespace) -> int:
    if args.demo:
        os.environ["LOCKSTEP_DEMO"] = "true"
    # Links in alert notifications point where this server listens unless told otherwise.
    os.environ.setdefault("LOCKSTEP_BASE_URL", f"http://{_shown_host(args.host)}:{args.port}")
    settings = _prepare(tell=False)  # the banner tells
    import django
    from django.core.management import call_command
    from django.db import connections

    django.setup()
    if not args.no_migrate:
        print("Lockstep: applying database migrations", flush=True)
        call_command("migrate", interactive=False, verbosity=0)
    if settings.LOCKSTEP_DEMO:
        call_command("bootstrap_demo")
        _create_demo_topic()
    _print_banner(args, settings)
    if "ingester" not in args.without:
        _warn_about_idle_ingesters(args.ingesters)
    connections.close_all()  # the supervisor forks: its children must not share them
    return _supervise(_processes(args, demo=settings.LOCKSTEP_DEMO))


def _create_demo_topic() -> None:
    """The demo's topic exists before any process starts: its subscriptions would
    otherwise start first and log that they wait for it. Same name and queues as the
    producer's ``--topic``/``--queues`` below (``create_topic`` is idempotent)."""
    from lockstep.dashboard.monitor.models import Topic
    from lockstep.dashboard.web.redis_conn import get_redis
    from lockstep.workers.topics import create_topic

    create_topic(get_redis(), DEMO_TOPIC, DEMO_QUEUES)
    Topic.objects.update_or_create(name=DEMO_TOPIC, defaults={"queues": DEMO_QUEUES})


def _processes(args: argparse.Namespace, *, demo: bool) -> dict[str, list[str]]:
    me = [sys.executable, "-m", "lockstep"]
    web = [*me, "web", "--host", args.host, "--port", str(args.port)]
    loglevel = ["--loglevel", args.loglevel]
    every = {
        "web": web + (["--proxy-headers"] if args.proxy_headers else []),
        "ingester": [*me, "ingester"],
        "alerts": [*me, "alerts"],
        "worker": [*me, "worker", "--concurrency", str(args.concurrency), *loglevel],
        "analytics": [*me, "analytics", *loglevel],
        "beat": [*me, "beat", *loglevel],
    }
    chosen: dict[str, list[str]] = {}
    for role, command in every.items():
        if role == "ingester" and role not in args.without:
            # One process each: they split the event streams among themselves.
            chosen.update({name: command for name in _ingester_names(args.ingesters)})
        elif role not in args.without:
            chosen[role] = command
    if demo:
        rate = os.environ.get("DEMO_RATE", "") or "50"
        chosen["producer"] = [*me, "manage", "demo_producer", "--topic", DEMO_TOPIC]
        chosen["producer"] += ["--queues", str(DEMO_QUEUES), "--rate", rate]
    return chosen


def _mixed_kill() -> Any:
    """How the supervisor signals a role, as systemd's ``KillMode=mixed`` (deploy/systemd/):
    SIGTERM to the role's own process only, SIGKILL to its whole process group once
    ``KILL_WAIT`` has passed. Honcho's default sends SIGTERM to the group: a Celery
    worker's pool children then die in the middle of their task (``WorkerLostError``, a
    traceback in the log) instead of finishing it in the worker's warm shutdown."""
    from honcho.compat import ProcessManager

    class MixedKill(ProcessManager):
        def terminate(self, pid: int) -> None:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signal.SIGTERM)

    return MixedKill()


def _supervise(processes: dict[str, list[str]], who: str = "lockstep dashboard") -> int:
    """Run ``processes`` (name -> argv) until a signal or until one of them ends; 0 after
    SIGINT or SIGTERM, else the first ended process's status (1 if it was 0). ``who``
    names the supervisor in its message."""
    if not processes:
        raise Unavailable("every role is excluded with --without: nothing to run")
    from honcho import manager as honcho
    from honcho.printer import Printer

    from lockstep.dashboard.env import STORES_TOLD_ENV
    from lockstep.workers.config import Timings

    honcho.KILL_WAIT = Timings.from_env().shutdown_timeout_s + STOP_MARGIN_S
    supervisor = honcho.Manager(Printer(sys.stdout))
    supervisor._procmgr = _mixed_kill()  # honcho's only seam for how it signals
    told = {**os.environ, STORES_TOLD_ENV: "1"}  # by the banner, or by _prepare
    for name, command in processes.items():
        supervisor.add_process(name, "exec " + shlex.join(command), env=told)
    supervisor.loop()
    status = supervisor.returncode
    if status in STOPPED_BY_SIGNAL:
        return 0
    print(f"{who}: a process ended (status {status}): stopped the others")
    return status if isinstance(status, int) and status > 0 else 1


def _print_banner(args: argparse.Namespace, settings: Any) -> None:
    from django.contrib.auth import get_user_model

    from lockstep.dashboard.env import database_label
    from lockstep.workers.redact import mask_url

    url = f"http://{_shown_host(args.host)}:{args.port}/login/"
    lines = [
        f"Lockstep dashboard: {url}  (Ctrl-C stops it)",
        f"  Redis: {mask_url(settings.REDIS_URL)}",
        f"  Celery queue: {settings.LOCKSTEP_CELERY_QUEUE} "
        f"(broker {mask_url(settings.CELERY_BROKER_URL)})",
        f"  Database: {database_label(settings.DATABASES['default'])}",
        f"  Data: {settings.LOCKSTEP_DATA_DIR}",
        f"  Settings file: {settings.LOCKSTEP_ENV_FILE or 'none (environment only)'}",
    ]
    if checkout.loaded is not None:
        lines.append(f"  Run settings: {checkout.loaded.path} ({checkout.loaded.about})")
    if not get_user_model().objects.exists():
        lines.append("  No user yet: create one with `lockstep manage createsuperuser`")
    print("\n".join(lines), flush=True)


def _shown_host(host: str) -> str:
    """A host a browser on this machine can open (a wildcard bind is not one)."""
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


# ---- what every Django-side command needs first ----------------------------------------


def _prepare(*, tell: bool = True) -> Any:
    """The dashboard's settings, loaded and checked, with the data directory created;
    ``Unavailable`` when the [dashboard] extra is missing or a setting is wrong. ``tell``:
    say on stderr which Redis and database the command uses (``env.tell_stores``)."""
    missing = [name for name in DASHBOARD_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise Unavailable(
            f"needs the dashboard's packages (missing: {', '.join(missing)}). "
            f"Install them with: {INSTALL_HINT}"
        )
    # Always Lockstep's own settings: a DJANGO_SETTINGS_MODULE left in the shell for the
    # adopter's own project must not point the dashboard at that project's database.
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        data_dir = Path(settings.LOCKSTEP_DATA_DIR)
    except ImproperlyConfigured as exc:
        raise Unavailable(f"configuration error: {exc}") from None
    # Private: the database holds the users' password hashes and the sessions.
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if tell:
        from lockstep.dashboard.env import tell_stores

        tell_stores(sys.stderr)
    return settings


def _version() -> str:
    from lockstep import __version__

    return __version__
