"""The reports page (the nightly analytics of one UTC day), its JSON twin, and "Run now".

- ``GET /analytics/?day=&topic=&group=&queue=`` and ``GET /api/v1/analytics/report`` (same
  parameters): the report of a day (``report.day_report``); the latest day with a report
  by default.
- ``POST /analytics/run`` (a form: CSRF by the middleware, then back to the page) and
  ``POST /api/v1/analytics/runs`` (JSON ``{"day": "YYYY-MM-DD"}``, ``X-CSRFToken``): queue
  a run of a day; both need ``reports.run_analytics`` (403 without it). The API answers
  202 with the run, or 409 with the run of that day already queued or running.
- ``GET /api/v1/analytics/runs/<id>``: a run's state, which the page polls.

Bad input is 400 and an unknown run 404, never a 500.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.utils.http import urlencode
from pydantic import ConfigDict, field_validator

from lockstep.dashboard.reports import runner
from lockstep.dashboard.reports.models import AnalyticsRun
from lockstep.dashboard.reports.report import (
    NoSuchDay,
    check_day,
    day_report,
    default_day,
    run_state,
)
from lockstep.dashboard.web.errors import error_answer, post_only
from lockstep.dashboard.web.json_input import JsonBody, parse_body
from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.roles import has_perm
from lockstep.dashboard.web.views import (
    BadParameter,
    NotFound,
    action_view,
    api_view,
    int_param,
    text_param,
)

RUN_ANALYTICS = "reports.run_analytics"
# ASCII digits only: ``\d`` would take other scripts' digits, which ``date`` refuses.
DAY_FORMAT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# As the dead-letter list's queue filter: no topic has more queues.
MAX_QUEUE = 1023
PAIR = ("topic", "group")


def may_run(user: AbstractBaseUser | AnonymousUser) -> bool:
    return has_perm(user, RUN_ANALYTICS)


def require_run_permission(user: AbstractBaseUser | AnonymousUser) -> None:
    if not may_run(user):
        raise PermissionDenied("your role does not allow you to start an analytics run")


def day_param(value: str | None) -> date | None:
    """A UTC day as ``YYYY-MM-DD``, from ``report.EARLIEST_DAY`` to today; None when
    absent or empty."""
    text = text_param(value, "day", max_length=64)
    if not text:
        return None
    if not DAY_FORMAT.fullmatch(text):
        raise BadParameter(f"day must be a date as YYYY-MM-DD, got {text!r}")
    try:
        return check_day(date.fromisoformat(text))
    except NoSuchDay as exc:
        raise BadParameter(str(exc)) from None
    except ValueError:
        raise BadParameter(f"day {text!r} is not a date of the calendar") from None


# ---- the report --------------------------------------------------------------------------


def build_report(request: HttpRequest) -> dict[str, Any]:
    """``report.day_report`` for the query's ``day``, ``topic``, ``group`` and ``queue``,
    plus ``may_run`` (whether this user may start a run) and ``links``."""
    params = request.GET
    day = day_param(params.get("day")) or default_day()
    topic = text_param(params.get("topic"), "topic", max_length=128)
    group = text_param(params.get("group"), "group", max_length=128)
    queue = int_param(params.get("queue"), "queue", maximum=MAX_QUEUE)
    data = day_report(day, topic, group, queue)
    selected = data["selected"] or {}
    query = {k: v for k, v in selected.items() if k != "queue" and v}
    data["may_run"] = may_run(request.user)
    data["links"] = {
        "api": _with_query("api-analytics-report", {"day": data["day"], **query}),
        "start_run": reverse("api-analytics-runs"),
    }
    return data


report_page = page_view("reports/report.html", build_report)
report_api = api_view(build_report)


def _with_query(name: str, query: dict[str, str]) -> str:
    return f"{reverse(name)}?{urlencode(query)}"


# ---- a run's state -----------------------------------------------------------------------


@api_view
def run_api(request: HttpRequest, run_id: str) -> dict[str, Any]:
    """The run's fields (``AnalyticsRun.as_dict``), ``active`` and ``links``."""
    pk = int_param(run_id, "run id", minimum=1)
    run = AnalyticsRun.objects.filter(pk=pk).first() if pk is not None else None
    if run is None:
        raise NotFound(f"no analytics run {pk}")
    return run_state(run)


# ---- Run now -----------------------------------------------------------------------------


@action_view
def start_run_api(request: HttpRequest) -> JsonResponse:
    require_run_permission(request.user)
    day = _body_day(request)
    try:
        run = runner.request_run(day, request.user.get_username())
    except runner.RunAlreadyActive as exc:
        return JsonResponse({"error": str(exc), "run": run_state(exc.run)}, status=409)
    return JsonResponse(run_state(run), status=202)


GIVE_THE_DAY = 'give the day to analyse: {"day": "YYYY-MM-DD"}'


class RunBody(JsonBody):
    """``POST /api/v1/analytics/runs``: ``{"day": "YYYY-MM-DD"}`` (a UTC day as
    ``day_param`` takes it); other fields are ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    day: str | None = None

    @field_validator("day", mode="before")
    @classmethod
    def _day(cls, value: Any) -> Any:
        if value is not None and (not isinstance(value, str) or day_param(value) is None):
            raise ValueError(GIVE_THE_DAY)
        return value


def _body_day(request: HttpRequest) -> date:
    day = parse_body(request, RunBody, example='{"day": "YYYY-MM-DD"}').day
    if day is None:
        raise BadParameter(GIVE_THE_DAY)
    return date.fromisoformat(day)


@login_required
@post_only
def start_run_page(request: HttpRequest) -> HttpResponse:
    """The page's form (without its script): queue the run, then back to the day's page,
    which shows the run's progress."""
    try:
        require_run_permission(request.user)
        day = day_param(request.POST.get("day"))
        if day is None:
            raise BadParameter("give the day to analyse (YYYY-MM-DD)")
        back = {"day": day.isoformat(), **_selection(request)}
        run = runner.request_run(day, request.user.get_username())
        messages.success(request, f"Queued analytics run {run.pk} of {day}.")
    except PermissionDenied as exc:
        return error_answer(request, 403, str(exc))
    except BadParameter as exc:
        return error_answer(request, 400, str(exc))
    except runner.RunAlreadyActive as exc:
        messages.info(request, f"Run {exc.run.pk} of {day} is already {exc.run.status}.")
    return HttpResponseRedirect(_with_query("analytics", back))


def _selection(request: HttpRequest) -> dict[str, str]:
    """The topic and group the form came from, to show again."""
    picked = {name: text_param(request.POST.get(name), name, max_length=128) for name in PAIR}
    return {k: v for k, v in picked.items() if v}
