"""The lag report page and its JSON twin."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.monitor.views.common import api_view
from dashboard.reports.models import AnalyticsRun


def _report() -> dict[str, Any]:
    """The latest run with a report, and the latest attempt: they differ when the latest
    attempt failed or is still running, and the page then says so above the report."""
    run = AnalyticsRun.objects.latest_report()
    return {
        "latest": AnalyticsRun.objects.latest_attempt(),
        "run": run,
        "summaries": list(run.lag_summaries.all()) if run else [],
        "stuck": list(run.stuck_intervals.all()) if run else [],
    }


@login_required
def lag_report_page(request: HttpRequest) -> HttpResponse:
    return render(request, "reports/lag_report.html", _report())


@api_view
def lag_report_api(request: HttpRequest) -> dict[str, Any]:
    report = _report()
    return {
        "latest_attempt": report["latest"].as_dict() if report["latest"] else None,
        "run": report["run"].as_dict() if report["run"] else None,
        "lag_summary": [s.as_dict() for s in report["summaries"]],
        "stuck_intervals": [s.as_dict() for s in report["stuck"]],
    }
