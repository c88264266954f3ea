"""``manage.py alerts run``: the evaluator and the dispatcher in the foreground (``make
run`` starts it); ``--once`` evaluates and sends once and exits (status 1, one line, when
Redis is unreachable).
``manage.py alerts list [--state open|acknowledged|resolved] [--rule R] [--limit N]
[--json]``: the alerts, newest first (``--json``: a list of objects with ``id``, ``rule``,
``state``, ``severity``, ``topic``, ``group``, ``queue``, ``key``, ``consumer``,
``offset``, ``opened_at``, ``resolved_at``, ``summary``)."""

from __future__ import annotations

import json
import signal
import threading
from argparse import ArgumentParser
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from lockstep.dashboard.alerts import dispatch, evaluate
from lockstep.dashboard.alerts.models import STATES, Alert
from lockstep.dashboard.alerts.rules import RULES
from lockstep.dashboard.env import tell_stores
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.workers.outage import REDIS_DOWN, describe


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def listing(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.pk,
        "rule": alert.rule,
        "state": alert.state,
        "severity": alert.severity,
        "topic": alert.topic,
        "group": alert.group,
        "queue": alert.queue,
        "key": alert.key,
        "consumer": alert.consumer,
        "offset": alert.offset,
        "opened_at": _iso(alert.opened_at),
        "resolved_at": _iso(alert.resolved_at),
        "summary": alert.summary,
    }


class Command(BaseCommand):
    help = "Run the alert evaluator (alerts run) or list alerts (alerts list)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        run = sub.add_parser("run", help="evaluate the rules and send notifications")
        run.add_argument("--once", action="store_true", help="one evaluation and one send")
        ls = sub.add_parser("list", help="print alerts, newest first")
        ls.add_argument("--state", choices=STATES)
        ls.add_argument("--rule", choices=sorted(RULES))
        ls.add_argument("--limit", type=int, default=100)
        ls.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args: Any, **options: Any) -> None:
        tell_stores(self.stderr)
        if options["action"] == "list":
            self._list(options)
        elif options["once"]:
            self._once()
        else:
            self._run()

    def _once(self) -> None:
        try:
            evaluate.Evaluator(get_redis()).tick()
        except REDIS_DOWN as exc:  # an outage, not a bug: one line and exit status 1
            raise CommandError(
                f"Redis is unreachable ({describe(exc)}); nothing evaluated"
            ) from None
        dispatch.send_due()

    def _list(self, options: dict[str, Any]) -> None:
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        alerts = Alert.objects.all()
        if options["state"]:
            alerts = alerts.filter(state=options["state"])
        if options["rule"]:
            alerts = alerts.filter(rule=options["rule"])
        rows = [listing(a) for a in alerts.order_by("-opened_at", "-id")[: options["limit"]]]
        if options["as_json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write("no alerts")
        for r in rows:
            self.stdout.write(
                f"#{r['id']:<5} {r['state']:<12} {r['rule']:<16} {r['opened_at'][:19]}Z  "
                f"{r['summary']}"
            )

    def _run(self) -> None:
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        sender = threading.Thread(target=dispatch.run, args=(stop,), name="alert-dispatch")
        sender.start()
        self.stdout.write(f"alerts: evaluating every {evaluate.interval_s():g} s; Ctrl-C stops")
        try:
            evaluate.run(get_redis(), stop)
        finally:
            stop.set()
            sender.join()
