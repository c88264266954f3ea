"""The alerts list and one alert's page, with the operators' acknowledge and
unacknowledge (docs/alerts.md, "Pages").

The list defaults to the unresolved alerts (open and acknowledged); ``?state=all`` or
``resolved`` is the history. It pages through alerts (newest first) and shows one row per
(rule, topic, group) of the page, as notifications group them, expandable to its alerts
(``groups``); a group's row counts all its alerts under the filters, not only the
page's. An acknowledgement is pushed to every page's badge (``push.publish``) after it
is saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from lockstep.dashboard.alerts import grouping, lifecycle, push
from lockstep.dashboard.alerts.fields import choice, row_id, text
from lockstep.dashboard.alerts.forms import AcknowledgeForm
from lockstep.dashboard.alerts.models import (
    ACKNOWLEDGED,
    CRITICAL,
    OPEN,
    RESOLVED,
    WARNING,
    Alert,
    Delivery,
)
from lockstep.dashboard.alerts.payload import subjects as payload_subjects
from lockstep.dashboard.alerts.permissions import ACKNOWLEDGE, VIEW_ALERT
from lockstep.dashboard.alerts.rules import RULES
from lockstep.dashboard.alerts.text import detail_rows as text_detail_rows
from lockstep.dashboard.web.pages import form_action, invalid, page, require
from lockstep.dashboard.web.roles import has_perm
from lockstep.dashboard.web.views import BadParameter, NotFound

PAGE_SIZE = 50
UNRESOLVED, ALL = "unresolved", "all"
STATE_FILTERS = (UNRESOLVED, OPEN, ACKNOWLEDGED, RESOLVED, ALL)
FILTER_NAMES = ("state", "rule", "severity", "topic", "group", "q")


# ---- the list ----------------------------------------------------------------------------


def list_filters(request: HttpRequest) -> dict[str, str]:
    """The filters as given, checked: ``BadParameter`` for an unknown state, rule or
    severity."""
    params = request.GET
    return {
        "state": choice(params, "state", STATE_FILTERS, default=UNRESOLVED),
        "rule": choice(params, "rule", RULES),
        "severity": choice(params, "severity", (WARNING, CRITICAL)),
        "topic": text(params, "topic"),
        "group": text(params, "group"),
        "q": text(params, "q", max_length=200),
    }


def filtered(filters: dict[str, str]) -> QuerySet[Alert]:
    alerts = Alert.objects.all()
    state = filters["state"]
    if state == UNRESOLVED:
        alerts = alerts.exclude(state=RESOLVED)
    elif state != ALL:
        alerts = alerts.filter(state=state)
    for name in ("rule", "severity", "topic", "group"):
        if filters[name]:
            alerts = alerts.filter(**{name: filters[name]})
    if filters["q"]:
        alerts = alerts.filter(summary__icontains=filters["q"])
    return alerts.order_by("-opened_at", "-id")


def page_number(request: HttpRequest) -> int:
    raw = (request.GET.get("page") or "1").strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:  # "²".isdigit() too
        raise BadParameter(f"page must be a whole number from 1, got {raw[:20]!r}")
    return int(raw)


@page("alerts/list.html", VIEW_ALERT)
def alerts_page(request: HttpRequest) -> dict[str, Any]:
    """``alerts`` (this page's rows), ``filters``, ``page`` / ``pages`` / ``total`` and
    links to the previous and next page that keep the filters."""
    filters = list_filters(request)
    paginator = Paginator(filtered(filters), PAGE_SIZE)
    number = page_number(request)
    if number > paginator.num_pages:
        raise NotFound(f"there is no page {number} (the last is {paginator.num_pages})")
    shown = paginator.page(number)
    kept = {name: value for name, value in filters.items() if value and value != UNRESOLVED}
    alerts = list(shown.object_list)
    return {
        "alerts": alerts,
        "groups": group_rows(alerts, filtered(filters), filters),
        "filters": filters,
        "rules": sorted(RULES),
        "states": STATE_FILTERS,
        "severities": (WARNING, CRITICAL),
        "page": number,
        "pages": paginator.num_pages,
        "total": paginator.count,
        "previous": _query({**kept, "page": str(number - 1)}) if shown.has_previous() else None,
        "next": _query({**kept, "page": str(number + 1)}) if shown.has_next() else None,
    }


def _query(params: dict[str, str]) -> str:
    return "?" + urlencode(params)


@dataclass
class GroupRow:
    """One row of the list: the alerts of one (rule, topic, group) on this page (listed
    as notifications list them: by queue, key, consumer), ``total`` of them under the
    filters, the worst severity, how many are in each state, and ``link``: the list
    filtered to the group."""

    rule: str
    topic: str
    group: str
    alerts: list[Alert] = field(default_factory=list)
    total: int = 0
    link: str = ""

    @property
    def lead(self) -> Alert:
        return self.alerts[0]

    @property
    def newest(self) -> Alert:
        return max(self.alerts, key=lambda a: (a.opened_at, a.pk))

    @property
    def severity(self) -> str:
        return CRITICAL if any(a.severity == CRITICAL for a in self.alerts) else WARNING

    @property
    def states(self) -> list[tuple[str, int]]:
        found = [a.state for a in self.alerts]
        return [(s, found.count(s)) for s in (OPEN, ACKNOWLEDGED, RESOLVED) if s in found]

    @property
    def acknowledged_by(self) -> str:
        return ", ".join(sorted({a.acknowledged_by for a in self.alerts if a.acknowledged_by}))

    @property
    def subjects(self) -> str:
        """``queues 0, 1, 2 …``: the first subjects, as a notification names them."""
        items = [
            {"id": a.pk, "queue": a.queue, "key": a.key, "consumer": a.consumer}
            for a in self.alerts[:GROUP_NAMED]
        ]
        more = "…" if len(self.alerts) > GROUP_NAMED else ""
        return payload_subjects(items) + more


# A group's row names this many of its subjects before "…"; its <details> lists all.
GROUP_NAMED = 10


def group_rows(
    alerts: list[Alert], matching: QuerySet[Alert], filters: dict[str, str]
) -> list[GroupRow]:
    """The page's ``alerts`` as one row per (rule, topic, group), in the order each
    group first appears (the newest alert's group first)."""
    rows: dict[tuple[str, str, str], GroupRow] = {}
    for alert in alerts:
        rows.setdefault(alert.group_key, GroupRow(*alert.group_key)).alerts.append(alert)
    totals = _totals(matching, {a.rule for a in alerts})
    for key, row in rows.items():
        row.alerts.sort(key=grouping.sort_key)
        row.total = totals.get(key, len(row.alerts))
        kept = {n: v for n, v in filters.items() if v and v != UNRESOLVED}
        row.link = _query({**kept, "rule": row.rule, "topic": row.topic, "group": row.group})
    return list(rows.values())


def _totals(matching: QuerySet[Alert], rules: set[str]) -> dict[tuple[str, str, str], int]:
    """How many alerts under the filters each (rule, topic, group) of ``rules`` has:
    one grouped query, whatever the storm's size."""
    counted = (
        matching.filter(rule__in=rules)
        .order_by()
        .values("rule", "topic", "group")
        .annotate(n=Count("id"))
    )
    return {(r["rule"], r["topic"], r["group"]): int(r["n"]) for r in counted}


# ---- one alert ---------------------------------------------------------------------------


def find_alert(alert_id: str) -> Alert:
    found = Alert.objects.filter(pk=row_id(alert_id, "alert")).first()
    if found is None:
        raise NotFound(f"no alert #{alert_id}")
    return found


def page_links(alert: Alert) -> dict[str, str | None]:
    """The queue's page and the group's dead letters (filtered to the alert's topic,
    queue and key), as paths on this site; ``None`` where the subject has none."""
    out: dict[str, str | None] = {"queue": None, "dead_letters": None}
    try:
        if alert.topic and alert.queue is not None:
            out["queue"] = reverse("queue", args=[alert.topic, alert.queue])
        if alert.topic and alert.group:
            query = {"topic": alert.topic}
            if alert.queue is not None:
                query["queue"] = str(alert.queue)
            if alert.key:
                query["key"] = alert.key
            out["dead_letters"] = reverse("dead-letters", args=[alert.group]) + _query(query)
    except NoReverseMatch:  # a topic or group name no URL can carry
        pass
    return out


def detail_rows(details: Any) -> list[tuple[str, str]]:
    """The alert's details as (label, value) rows with their units (``text.detail_rows``);
    a template cannot iterate a dict safely (a key named ``items`` would shadow the
    method)."""
    return text_detail_rows(details)


def deliveries_of(alert: Alert) -> list[Delivery]:
    """Every notification that told of ``alert``: those it led and those of its group
    that named it, newest first."""
    told = Delivery.objects.filter(Q(alert=alert) | Q(alerts=alert)).distinct()
    return list(told.select_related("channel").order_by("-created_at", "-id"))


@page("alerts/detail.html", VIEW_ALERT)
def alert_page(request: HttpRequest, alert_id: str) -> dict[str, Any]:
    alert = find_alert(alert_id)
    rule = RULES.get(alert.rule)
    return {
        "alert": alert,
        "rule_description": rule.description if rule else "(a rule this version does not know)",
        "subject": [(n, v) for n, v in alert.subject().items() if v not in ("", None)],
        "details": detail_rows(alert.details),
        # How stale the summary's durations may be (its counts are rewritten at once).
        "rewrite_s": lifecycle.SEEN_EVERY.total_seconds(),
        "timeline": list(alert.timeline.all()),
        "deliveries": deliveries_of(alert),
        "links": page_links(alert),
        "may_acknowledge": has_perm(request.user, ACKNOWLEDGE),
        "form": AcknowledgeForm(),
    }


@form_action
def acknowledge_view(request: HttpRequest, alert_id: str) -> HttpResponse:
    """``note`` and ``snooze_until`` (a date and time in the viewer's zone, optional)."""
    require(request, ACKNOWLEDGE, "acknowledge alerts")
    alert = find_alert(alert_id)
    form = AcknowledgeForm(request.POST)
    if not form.is_valid():
        if alert.state == RESOLVED:  # its page has no form to show the errors in
            raise BadParameter("this alert is resolved; there is nothing to acknowledge")
        return invalid(request, alert_page, {"form": form}, alert_id)
    note, snooze = form.cleaned_data["note"], form.cleaned_data["snooze_until"]
    try:
        lifecycle.acknowledge(alert, request.user.get_username(), note, snooze)
    except ValueError as exc:
        raise BadParameter(str(exc)) from None
    push.publish()
    shown = f"{timezone.localtime(snooze):%Y-%m-%d %H:%M} {timezone.get_current_timezone_name()}"
    done = f"snoozed until {shown}" if snooze else "acknowledged"
    messages.success(request, f"Alert #{alert.pk} {done}.")
    return redirect("alert-detail", alert.pk)


@form_action
def unacknowledge_view(request: HttpRequest, alert_id: str) -> HttpResponse:
    require(request, ACKNOWLEDGE, "unacknowledge alerts")
    alert = find_alert(alert_id)
    try:
        lifecycle.unacknowledge(alert, request.user.get_username(), text(request.POST, "note"))
    except ValueError as exc:
        raise BadParameter(str(exc)) from None
    push.publish()
    messages.success(request, f"Alert #{alert.pk} is open again.")
    return redirect("alert-detail", alert.pk)
