"""A run as short plain text: what ``manage.py run_analytics`` prints."""

from __future__ import annotations

from datetime import datetime

from dashboard.reports.models import AnalyticsRun, LagSummary, StuckInterval

_HEADER = (
    "queue",
    "samples",
    "avg lag",
    "p95 lag",
    "max lag",
    "max time lag s",
    "commits",
    "retries",
    "DLQ",
)


def report_lines(run: AnalyticsRun) -> list[str]:
    lines = [
        f"Analytics run {run.pk} on {run.spark_master}: {run.get_status_display()}",
        f"Window {_when(run.window_start)} to {_when(run.window_end)}, "
        f"{run.events_exported} events exported",
    ]
    if run.status == AnalyticsRun.Status.EMPTY:
        lines.append(
            "No events in this window: nothing to analyse. Is the ingester "
            "(manage.py ingest_events) running and is lag sampling scheduled?"
        )
    elif run.status == AnalyticsRun.Status.FAILED:
        lines.append(f"Failed: {run.error}")
    else:
        lines += _malformed(run) + _table(list(run.lag_summaries.all()))
        lines += [_stuck(s) for s in run.stuck_intervals.all()]
    return lines


def _when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def _malformed(run: AnalyticsRun) -> list[str]:
    if not run.events_malformed:
        return []
    plural = "" if run.events_malformed == 1 else "s"
    lines = [f"{run.events_malformed} malformed event{plural} skipped, for example:"]
    lines += [
        f"  {e['id']} {e['type']}: {e['problem']} ({e['raw']})" for e in run.malformed_examples
    ]
    return lines


def _table(rows: list[LagSummary]) -> list[str]:
    if not rows:
        return ["No usable queue events (lag samples, commits, retries, dead letters)."]
    body = [
        (
            f"{r.topic}/{r.group}/{r.queue}",
            str(r.samples),
            _num(r.avg_lag),
            _num(r.p95_lag),
            _num(r.max_lag),
            _num(r.max_time_lag_s),
            str(r.commits),
            str(r.retries),
            str(r.dead_letters),
        )
        for r in rows
    ]
    widths = [max(len(cells[i]) for cells in [_HEADER, *body]) for i in range(len(_HEADER))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()
        for cells in [_HEADER, *body]
    ]


def _num(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _stuck(s: StuckInterval) -> str:
    state = "still stuck at the last sample" if s.ongoing else "then moved"
    return (
        f"Stuck: {s.topic}/{s.group}/{s.queue} at offset {s.committed_offset} for "
        f"{s.duration_s:.0f} s from {_when(s.started_at)} (max lag {s.max_lag}), {state}"
    )
