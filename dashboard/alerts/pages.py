"""The alerts list and one alert's page, with the operators' acknowledge and
unacknowledge (docs/alerts.md, "Pages").

The list defaults to the unresolved alerts (open and acknowledged); ``?state=all`` or
``resolved`` is the history. An acknowledgement is pushed to every page's badge
(``push.publish``) after it is saved.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from lockstep.dashboard.alerts import lifecycle, push
from lockstep.dashboard.alerts.fields import choice, row_id, text
from lockstep.dashboard.alerts.forms import AcknowledgeForm
from lockstep.dashboard.alerts.models import ACKNOWLEDGED, CRITICAL, OPEN, RESOLVED, WARNING, Alert
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
    return {
        "alerts": list(shown.object_list),
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


@page("alerts/detail.html", VIEW_ALERT)
def alert_page(request: HttpRequest, alert_id: str) -> dict[str, Any]:
    alert = find_alert(alert_id)
    rule = RULES.get(alert.rule)
    return {
        "alert": alert,
        "rule_description": rule.description if rule else "(a rule this version does not know)",
        "subject": [(n, v) for n, v in alert.subject().items() if v not in ("", None)],
        "details": detail_rows(alert.details),
        "timeline": list(alert.timeline.all()),
        "deliveries": list(alert.deliveries.select_related("channel").order_by("-created_at")),
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
