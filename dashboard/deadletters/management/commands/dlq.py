"""``manage.py dlq list|show|replay|discard``: the dead letters from the shell.

Every action syncs first (Redis → database), so what it sees is current; when Redis
cannot be reached ``list`` and ``show`` say so on stderr and print what was recorded.
``--json`` prints one JSON document: for ``list`` the API's ``{"items", "next_cursor",
"count_waiting", ...}``, for ``show`` the API's record, for ``replay`` / ``discard`` with
``--dry-run`` the API's plan, and otherwise ``{"request_id", "action", "state", "count",
"outcomes", "items": [{"id", "outcome", "detail"}]}``.

``replay`` and ``discard`` go through the same service as the API
(``dashboard.deadletters.actions``), run in the command itself (not in Celery) at the
``LOCKSTEP_REPLAY_RATE_PER_S`` rate, and are idempotent on ``--request-id``: running the
command again with the same id acts on nothing twice (it goes on with what a killed run
left pending, and prints the request's outcomes).
"""

from __future__ import annotations

import getpass
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lockstep.dashboard.deadletters import actions, present
from lockstep.dashboard.deadletters.models import ActionItem, ActionRequest, DeadLetter, Status
from lockstep.dashboard.deadletters.plans import ActionRefused, Selection, counted, plan
from lockstep.dashboard.deadletters.progress import outcome_counts
from lockstep.dashboard.deadletters.queries import (
    MAX_LIMIT,
    Filters,
    count_waiting,
    cursor_param,
    page,
    sort_param,
)
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.dashboard.deadletters.views import require_known_group
from lockstep.dashboard.env import tell_stores
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.views import BadParameter, NotFound

FILTERS = ("topic", "queue", "key", "error", "status", "since", "until")


class Command(BaseCommand):
    help = "List dead letters of a group, show one, replay or discard them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("list", "show", "replay", "discard"))
        parser.add_argument("--group", required=True)
        parser.add_argument("--topic")
        parser.add_argument("--queue")
        parser.add_argument("--key")
        parser.add_argument("--error", help="part of the error text")
        parser.add_argument(
            "--status", help=f"one or several, comma-separated: {', '.join(Status.values)}"
        )
        parser.add_argument("--since", help="epoch ms or ISO 8601")
        parser.add_argument("--until", help="epoch ms or ISO 8601")
        parser.add_argument("--sort", default="-dead_at", help="-dead_at (default) or dead_at")
        parser.add_argument("--limit", type=int, default=100, help=f"1..{MAX_LIMIT}")
        parser.add_argument("--cursor", help="next_cursor of the previous list")
        parser.add_argument(
            "--ids", nargs="+", default=[], help="show: the record id; replay/discard: these"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON document")
        parser.add_argument(
            "--dry-run", action="store_true", help="replay/discard: say what would be done"
        )
        parser.add_argument(
            "--request-id", help="replay/discard: idempotency key (default: a new one)"
        )
        parser.add_argument("--reason", default="", help="replay/discard (required to discard)")
        parser.add_argument("--actor", help="replay/discard: who acts (default: the OS user)")

    def handle(self, *args: Any, **options: Any) -> None:
        tell_stores(self.stderr)
        group = options["group"]
        client = get_redis()
        self._sync(client, group)
        try:
            self._require_group(group)
            if options["action"] == "list":
                self._list(group, options)
            elif options["action"] == "show":
                self._show(client, group, options)
            else:
                self._act(client, group, options)
        except (BadParameter, NotFound, ActionRefused) as exc:
            raise CommandError(str(exc)) from None

    def _sync(self, client: redis.Redis, group: str) -> None:
        try:
            sync_all(client, group=group)
        except redis.RedisError as exc:
            self.stderr.write(f"could not sync from Redis ({exc}); showing what was recorded")

    def _require_group(self, group: str) -> None:
        try:
            require_known_group(group)
        except redis.RedisError:
            if not DeadLetter.objects.filter(group=group).exists():
                raise NotFound(f"no dead letters recorded for group {group!r}") from None

    def _list(self, group: str, options: dict[str, Any]) -> None:
        if not 1 <= options["limit"] <= MAX_LIMIT:
            raise CommandError(f"--limit must be 1..{MAX_LIMIT}")
        params = {name: str(options[name]) for name in FILTERS if options[name] is not None}
        filters = Filters.from_params(params)
        sort = sort_param(options["sort"])
        found = page(group, filters, sort, cursor_param(options["cursor"], sort), options["limit"])
        items = [present.item(r) for r in found.records]
        waiting = count_waiting(group, filters)
        if options["json"]:
            document = {
                "group": group,
                "items": items,
                "next_cursor": found.next_cursor,
                "count_waiting": waiting,
            }
            self.stdout.write(json.dumps(document))
            return
        for line in _table(items):
            self.stdout.write(line)
        self.stdout.write(f"{len(items)} shown, {waiting} waiting")
        if found.next_cursor:
            self.stdout.write(f"more: --cursor {found.next_cursor}")

    def _show(self, client: redis.Redis, group: str, options: dict[str, Any]) -> None:
        if len(options["ids"]) != 1:
            raise CommandError("show takes exactly one id: --ids ID")
        raw = options["ids"][0]
        if not raw.isdigit():
            raise CommandError(f"id must be a whole number, got {raw!r}")
        record = DeadLetter.objects.filter(group=group, pk=int(raw)).first()
        if record is None:
            raise CommandError(f"no dead letter {raw} in group {group!r}")
        data = present.detail(record, client, show_body=True)
        if options["json"]:
            self.stdout.write(json.dumps(data))
        else:
            for line in _describe(data):
                self.stdout.write(line)

    def _act(self, client: redis.Redis, group: str, options: dict[str, Any]) -> None:
        action = options["action"]
        selection = _selection(options)
        if options["dry_run"]:
            found = plan(client, group, action, selection)
            if options["json"]:
                self.stdout.write(json.dumps(found.as_dict()))
            else:
                for line in _describe_plan(found.as_dict()):
                    self.stdout.write(line)
            return
        request_id = options["request_id"] or uuid.uuid4().hex
        actor = options["actor"] or _os_user()
        submitted = actions.submit(
            actor, group, action, request_id, selection, options["reason"], inline=True
        )
        # The same id again: go on with what a killed run left pending (else nothing).
        request = actions.run(request_id) or submitted.request
        document = _outcome_document(request)
        if options["json"]:
            self.stdout.write(json.dumps(document))
            return
        if not submitted.created:
            self.stdout.write(f"request {request_id} was submitted before; its outcomes:")
        for line in _describe_outcome(document):
            self.stdout.write(line)


def _selection(options: dict[str, Any]) -> Selection:
    if options["ids"]:
        bad = [i for i in options["ids"] if not i.isdigit()]
        if bad:
            raise CommandError(f"ids must be whole numbers, got {bad[0]!r}")
        return Selection.of_ids(int(i) for i in options["ids"])
    return Selection.of_filter(
        {name: str(options[name]) for name in FILTERS if options[name] is not None}
    )


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in this environment
        return "cli"


def _outcome_document(request: ActionRequest) -> dict[str, Any]:
    items = ActionItem.objects.filter(request=request).order_by("id")
    return {
        "request_id": request.request_id,
        "action": request.action,
        "state": request.state,
        "count": request.total,
        "outcomes": outcome_counts(request),
        "items": [
            {"id": i.record_id, "outcome": i.outcome, "detail": i.detail}
            for i in items.only("record_id", "outcome", "detail")
        ],
    }


def _describe_plan(data: dict[str, Any]) -> list[str]:
    lines = [
        f"would {data['action']} {counted(data['count'], 'dead letter')} of "
        f"{counted(data['key_count'], 'key')}"
    ]
    lines += [f"  skipped {s['count']}: {s['reason']}" for s in data["skipped_reasons"]]
    lines += [f"  queue {q['topic']}/{q['queue']}: {q['count']}" for q in data["queues"]]
    lines += [f"  key {k['key']}: {k['count']}" for k in data["keys"]]
    lines += [f"order: {note}" for note in data["order_notes"]]
    return lines


def _describe_outcome(data: dict[str, Any]) -> list[str]:
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(data["outcomes"].items()))
    lines = [f"{i['id']:>8}  {i['outcome']:<12} {i['detail']}" for i in data["items"]]
    lines.append(
        f"{data['action']} request {data['request_id']} ({data['state']}): "
        f"{counted(data['count'], 'dead letter')}: {counts}"
    )
    return lines


def _table(items: list[dict[str, Any]]) -> list[str]:
    head = (
        f"{'ID':>8}  {'STATUS':<14} {'WHERE':<24} {'KEY':<24} {'RETRIES':>7}  "
        f"{'DEAD AT (UTC)':<19}  ERROR"
    )
    rows = [head]
    for i in items:
        where = f"{i['topic']}/{i['queue']}@{i['offset']}"
        rows.append(
            f"{i['id']:>8}  {i['status']:<14} {where:<24.24} {i['key']:<24.24} "
            f"{i['reconsume_times']:>7}  {_utc(i['dead_at_ms'])}  {_one_line(i['error'], 80)}"
        )
    return rows


def _describe(data: dict[str, Any]) -> list[str]:
    lines = [
        f"dead letter {data['id']} ({data['status']}): {data['topic']} queue {data['queue']} "
        f"offset {data['offset']}, group {data['group']}",
        f"key: {data['key']}",
        f"dead-lettered at {_utc(data['dead_at_ms'])} after {data['reconsume_times']} retries "
        f"(ordering {data['ordering'] or '?'}, after_dlq {data['after_dlq'] or '?'})",
        f"error: {data['error']}",
        f"headers: {json.dumps(data['headers'], ensure_ascii=False)}",
        *_body_lines(data["body"]),
        "attempts:",
        *(f"  {_utc(a.get('at_ms', 0))}  {a.get('error', '')}" for a in data["attempts"]),
        "history:",
        *(
            f"  {_utc(h['at_ms'])}  {h['status']:<14} {h['actor'] or 'runtime'}  {h['note']}"
            for h in data["history"]
        ),
    ]
    hold = data["hold"]
    if hold:
        lines.append(
            f"key {hold['state']}{' by this dead letter' if hold['held_by_this'] else ''}: "
            f"{counted(hold['parked_messages'], 'message')} parked behind it"
        )
    return lines


def _body_lines(body: dict[str, Any]) -> list[str]:
    cut = " (cut)" if body["truncated"] else ""
    title = f"body ({body['kind']}, {body['size']} bytes){cut}:"
    if body["kind"] == "binary":
        return [title, body["hex"]]
    return [title, body.get("pretty") or body["text"]]


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _one_line(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
