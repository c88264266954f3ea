"""The report of one UTC day as plain data, and as text.

``day_report`` is what the reports page renders and its JSON twin returns: the day's
latest successful run (``AnalyticsRun.objects.report_of``), one (topic, group)'s
headline figures compared with the day before and the same weekday a week earlier, its
hourly series, worst queues, stuck episodes, retry hotspots, key skew and lock churn.
``report_lines`` is what ``manage.py run_analytics`` prints after a run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, timedelta
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from lockstep.dashboard.reports.models import (
    AnalyticsRun,
    GroupDay,
    HourlyGroup,
    HourlyQueue,
    KeySkew,
    QueueDay,
    RetryHotspot,
    StuckEpisode,
)
from lockstep.dashboard.web.formatting import counted, duration, subject

# No run can analyse a day before the data set existed; a bound also keeps "the day
# before" and "a week earlier" inside what ``date`` can hold.
EARLIEST_DAY = date(2000, 1, 1)
WEEK = timedelta(days=7)
# A queue carrying this many times its topic's mean of messages is marked skewed: with
# keys spread by hashing, queues stay within a few tens of percent of the mean.
SKEWED_OVER_MEAN = 1.5
# Outcomes of a stuck episode that left a dead letter behind (docs/analytics.md §4).
DEAD_LETTER_OUTCOMES = ("dead_lettered", "replayed", "discarded")


@dataclass(frozen=True)
class Figure:
    """A headline figure: a ``GroupDay`` field and which way is worse (``""``: neither,
    as for throughput, where more is neither good nor bad by itself)."""

    name: str
    label: str
    unit: str
    worse: str = "higher"


HEADLINE = (
    Figure("time_lag_p99", "p99 time lag", "s"),
    Figure("lag_p99", "p99 offset lag", "messages"),
    Figure("seconds_above_threshold", "above lag threshold", "s"),
    Figure("produced", "produced", "messages", worse=""),
    Figure("consumed", "consumed", "messages", worse=""),
    Figure("retries", "retries", ""),
    Figure("dead_letters", "dead letters", ""),
    Figure("dead_letter_rate", "dead-letter rate", "ratio"),
    Figure("stuck_episodes", "stuck episodes", ""),
    Figure("owner_changes", "owner changes", ""),
    Figure("rebalances", "rebalances", ""),
    Figure("fencing_rejections", "fencing rejections", ""),
)
# The earlier days each figure is compared with: the day before, and the same weekday a
# week earlier (traffic often follows the week).
COMPARED = (("previous", timedelta(days=1)), ("week_earlier", WEEK))


class NoSuchDay(ValueError):
    """A day that is not a UTC day in range (the message says why)."""


def today() -> date:
    """Today, in UTC: the days analysed are UTC days."""
    return timezone.now().astimezone(UTC).date()


def check_day(day: date) -> date:
    """``day`` when a run of it could exist: from ``EARLIEST_DAY`` to today (UTC)."""
    if not EARLIEST_DAY <= day <= today():
        raise NoSuchDay(f"day must be from {EARLIEST_DAY} to today ({today()}), got {day}")
    return day


def default_day() -> date:
    """The latest day with a report; today (UTC) when there is none yet: the day whose
    data the writer is appending now, so the page opens on the day a first run (the
    demo's, or "Run now") has something to analyse. The nightly run reports yesterday
    from then on."""
    latest = AnalyticsRun.objects.reports().order_by("-day", "-started_at").first()
    return latest.day if latest else today()


# ---- the report of a day -----------------------------------------------------------------


def day_report(day: date, topic: str = "", group: str = "", queue: int | None = None) -> dict:
    """The report of ``day`` for one (topic, group): the asked one, else the first of the
    day (``notice`` says when the asked one has no figures that day). ``queue`` switches
    the hourly series to that queue's. Without a report of the day, ``run`` is None and
    every list is empty; ``attempt`` is the day's latest run whatever its state."""
    run = AnalyticsRun.objects.report_of(day)
    attempt = AnalyticsRun.objects.filter(day=day).order_by("-started_at", "-id").first()
    pairs = list(GroupDay.objects.filter(run=run)) if run else []
    chosen, notice = _choose(pairs, topic, group)
    report: dict[str, Any] = {
        "day": day.isoformat(),
        "days": _days(day),
        "run": run_state(run) if run else None,
        "attempt": run_state(attempt) if attempt else None,
        "lag_threshold_s": settings.LOCKSTEP_ALERT_LAG_SECONDS,
        "skewed_over_mean": SKEWED_OVER_MEAN,
        "pairs": [_pair(p, p is chosen) for p in pairs],
        "notice": notice,
        "selected": None,
        "headline": [],
        "compared_with": {},
        "comparison_notes": [],
        "hourly": {"queue": None, "rows": []},
        "queues": [],
        "stuck_episodes": [],
        "retry_hotspots": {"keys": [], "errors": []},
        "key_skew": [],
        "lock_churn": [],
    }
    if run is None or chosen is None:
        return report
    queues = _queues(run, chosen)
    shown_queue, queue_notice = _choose_queue(queues, queue)
    compared = {name: _earlier(day - ago, chosen) for name, ago in COMPARED}
    report.update(
        notice=notice or queue_notice,
        selected={"topic": chosen.topic, "group": chosen.group, "queue": shown_queue},
        headline=[_headline(f, chosen, compared) for f in HEADLINE],
        compared_with={name: c["about"] for name, c in compared.items()},
        comparison_notes=_comparison_notes(compared, chosen),
        hourly=_hourly(run, chosen, shown_queue),
        queues=queues,
        stuck_episodes=_stuck(run, chosen),
        retry_hotspots=_hotspots(run, chosen),
        key_skew=_skew(run, chosen.topic),
        lock_churn=_churn(queues),
    )
    return report


def run_state(run: AnalyticsRun) -> dict[str, Any]:
    """A run as the page and its polling see it: its fields, whether it is still under
    way (``active``), and where to ask for its state again."""
    return {
        **run.as_dict(),
        "active": run.status in (AnalyticsRun.Status.QUEUED, AnalyticsRun.Status.RUNNING),
        "links": {
            "state": reverse("api-analytics-run", args=[str(run.pk)]),
            "report": _url("analytics", [], {"day": run.day.isoformat()}),
        },
    }


def _days(day: date) -> dict[str, str | None]:
    """The days the page links to: the one before and after (within range), the same
    weekday a week earlier, and the latest day with a report."""
    latest = AnalyticsRun.objects.reports().order_by("-day", "-started_at").first()
    before, after = day - timedelta(days=1), day + timedelta(days=1)
    return {
        "previous": before.isoformat() if before >= EARLIEST_DAY else None,
        "next": after.isoformat() if after <= today() else None,
        "week_earlier": (day - WEEK).isoformat(),
        "latest_report": latest.day.isoformat() if latest else None,
        "earliest": EARLIEST_DAY.isoformat(),
        "today": today().isoformat(),
    }


def _choose(pairs: list[GroupDay], topic: str, group: str) -> tuple[GroupDay | None, str]:
    if not pairs:
        return None, ""
    if not topic and not group:
        return pairs[0], ""
    for p in pairs:
        if p.topic == topic and (p.group == group or not group):
            return p, ""
    asked, shown = f"{topic or '*'}/{group or '*'}", f"{pairs[0].topic}/{pairs[0].group}"
    return pairs[0], f"{asked} has no figures on this day: showing {shown}."


def _choose_queue(queues: list[dict], queue: int | None) -> tuple[int | None, str]:
    if queue is None or any(q["queue"] == queue for q in queues):
        return queue, ""
    return None, f"queue {queue} has no figures on this day: showing the whole group."


def _pair(p: GroupDay, selected: bool) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "group": p.group,
        "time_lag_p99": p.time_lag_p99,
        "stuck_episodes": p.stuck_episodes,
        "dead_letters": p.dead_letters,
        "selected": selected,
    }


# ---- comparisons -------------------------------------------------------------------------


def _earlier(day: date, chosen: GroupDay) -> dict[str, Any]:
    """The same (topic, group)'s figures on an earlier day: ``about`` says whether that
    day has a report (``no_report``) and the pair figures in it (``no_figures``)."""
    run = AnalyticsRun.objects.report_of(day) if day >= EARLIEST_DAY else None
    figures = (
        GroupDay.objects.filter(run=run, topic=chosen.topic, group=chosen.group).first()
        if run
        else None
    )
    state = "ok" if figures else "no_figures" if run else "no_report"
    about = {"day": day.isoformat(), "run_id": run.pk if run else None, "state": state}
    return {"about": about, "figures": figures}


COMPARED_LABELS = {"previous": "the day before", "week_earlier": "the week before"}


def _comparison_notes(compared: dict[str, Any], chosen: GroupDay) -> list[str]:
    """Why a comparison is missing, once per earlier day rather than in every figure:
    that day has no report (and how to get one), or its report has no figures of the
    shown (topic, group)."""
    notes = []
    for name, earlier in compared.items():
        about = earlier["about"]
        label = f"{COMPARED_LABELS.get(name, name)} ({about['day']})"
        if about["state"] == "no_report":
            notes.append(
                f"No comparison with {label}: that day has no report. The nightly run "
                f"reports each day once it is over; for an earlier day, run "
                f"python manage.py run_analytics --date {about['day']}."
            )
        elif about["state"] == "no_figures":
            notes.append(
                f"No comparison with {label}: its report has no figures of "
                f"{chosen.topic}/{chosen.group}."
            )
    return notes


def _headline(figure: Figure, chosen: GroupDay, compared: dict[str, Any]) -> dict[str, Any]:
    value = getattr(chosen, figure.name)
    out: dict[str, Any] = {
        "name": figure.name,
        "label": figure.label,
        "unit": figure.unit,
        "worse": figure.worse,
        "value": value,
    }
    for name, earlier in compared.items():
        other = earlier["figures"]
        out[name] = None if other is None else _delta(figure, value, getattr(other, figure.name))
    return out


def _delta(figure: Figure, value: float | None, before: float | None) -> dict[str, Any]:
    """``value`` against ``before``: the difference, the relative change (None from 0),
    and whether it got ``worse``, ``better`` or stayed the ``same`` (``changed`` for a
    figure that is neither, ``""`` when either value is unknown)."""
    if value is None or before is None:
        return {"value": before, "delta": None, "relative": None, "change": ""}
    delta = value - before
    relative = delta / before if before else None
    if delta == 0:
        change = "same"
    elif not figure.worse:
        change = "changed"
    else:
        change = "worse" if (delta > 0) == (figure.worse == "higher") else "better"
    return {"value": before, "delta": delta, "relative": relative, "change": change}


# ---- series and tables -------------------------------------------------------------------


def _hourly(run: AnalyticsRun, chosen: GroupDay, queue: int | None) -> dict[str, Any]:
    rows: Iterable[HourlyGroup | HourlyQueue]
    if queue is None:
        rows = HourlyGroup.objects.filter(run=run, topic=chosen.topic, group=chosen.group)
    else:
        rows = HourlyQueue.objects.filter(
            run=run, topic=chosen.topic, group=chosen.group, queue=queue
        )
    return {"queue": queue, "rows": [r.as_dict() for r in rows]}


def _queues(run: AnalyticsRun, chosen: GroupDay) -> list[dict[str, Any]]:
    """The pair's queues, worst first: by p99 time lag (queues without samples last),
    then by the time spent above the lag threshold."""
    rows = QueueDay.objects.filter(run=run, topic=chosen.topic, group=chosen.group)
    ordered = sorted(
        rows,
        key=lambda q: (
            q.time_lag_p99 is None,
            -(q.time_lag_p99 or 0.0),
            -q.seconds_above_threshold,
            q.queue,
        ),
    )
    return [{**q.as_dict(), "links": {"queue": _queue_url(q.topic, q.queue)}} for q in ordered]


def _churn(queues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queues whose lock changed hands or was lost, most churn first."""
    fields = ("owner_changes", "lock_losses", "fencing_rejections", "margin_overruns")
    churned = [q for q in queues if any(q[f] for f in fields)]
    return sorted(churned, key=lambda q: (-sum(q[f] for f in fields), q["queue"]))


def _stuck(run: AnalyticsRun, chosen: GroupDay) -> list[dict[str, Any]]:
    episodes = StuckEpisode.objects.filter(run=run, topic=chosen.topic, group=chosen.group)
    return [{**e.as_dict(), "links": _episode_links(e)} for e in episodes]


def _episode_links(e: StuckEpisode) -> dict[str, str | None]:
    if e.level == StuckEpisode.Level.KEY and e.key:
        lookup = {"topic": e.topic, "key": e.key}
    else:
        lookup = {"topic": e.topic, "queue": str(e.queue), "offset": str(e.offset)}
    dead: str | None = None
    if e.outcome in DEAD_LETTER_OUTCOMES:
        filters = {"topic": e.topic, "queue": str(e.queue), "key": e.key}
        filters["since"] = e.started_at.isoformat(timespec="seconds")
        dead = _url("dead-letters", [e.group], {k: v for k, v in filters.items() if v})
    return {
        "queue": _queue_url(e.topic, e.queue),
        "key": _url("messages", [], {"topic": e.topic, "key": e.key}) if e.key else None,
        "message": _url("messages", [], lookup),
        "dead_letters": dead,
    }


def _hotspots(run: AnalyticsRun, chosen: GroupDay) -> dict[str, list[dict[str, Any]]]:
    rows = RetryHotspot.objects.filter(run=run, topic=chosen.topic, group=chosen.group)
    keys, errors = [], []
    for h in rows:
        if h.kind == RetryHotspot.Kind.KEY:
            link = _url("messages", [], {"topic": h.topic, "key": h.name})
            keys.append({**h.as_dict(), "links": {"lookup": link}})
        else:
            link = _url("dead-letters", [h.group], {"topic": h.topic, "error": h.name[:256]})
            errors.append({**h.as_dict(), "links": {"dead_letters": link}})
    return {"keys": keys, "errors": errors}


def _skew(run: AnalyticsRun, topic: str) -> list[dict[str, Any]]:
    """The topic's queues; ``skewed`` marks those carrying ``SKEWED_OVER_MEAN`` times the
    topic's mean or more."""
    return [
        {
            **s.as_dict(),
            "skewed": s.over_topic_mean >= SKEWED_OVER_MEAN,
            "links": {
                "queue": _queue_url(s.topic, s.queue),
                "top_key": _url("messages", [], {"topic": s.topic, "key": s.top_key})
                if s.top_key
                else None,
            },
        }
        for s in KeySkew.objects.filter(run=run, topic=topic)
    ]


def _queue_url(topic: str, queue: int) -> str:
    return reverse("queue", args=[topic, str(queue)])


def _url(name: str, args: list[str], query: dict[str, str]) -> str:
    path = reverse(name, args=args)
    return f"{path}?{urlencode(query)}" if query else path


# ---- as text (manage.py run_analytics) ---------------------------------------------------


def report_lines(run: AnalyticsRun) -> list[str]:
    """A run in a few lines: its state, then per (topic, group) the day's headline
    figures, then the stuck episodes."""
    took = f" in {duration(run.duration_s)}" if run.duration_s is not None else ""
    lines = [
        f"Analytics run {run.pk} of {run.day} on {run.spark_master}: "
        f"{run.get_status_display()}{took}",
    ]
    if run.status == AnalyticsRun.Status.FAILED:
        return [*lines, f"Failed: {run.error}"]
    if run.status in (AnalyticsRun.Status.QUEUED, AnalyticsRun.Status.RUNNING):
        return [*lines, f"Now: {run.stage or 'waiting'} ({run.progress}%)"]
    lines.append(
        f"Read {run.messages_read:,} messages, {run.events_read:,} events and "
        f"{run.samples_read:,} lag samples from {run.data_uri}"
    )
    if run.status == AnalyticsRun.Status.EMPTY:
        return [
            *lines,
            "No data for this day: is the beat task write_analytics_data running "
            "(celery beat), and does LOCKSTEP_ANALYTICS_URI name where it writes?",
        ]
    pairs = list(GroupDay.objects.filter(run=run))
    if not pairs:
        lines.append("No consumer group had samples or events on this day.")
    lines += [_pair_line(p) for p in pairs]
    lines += [_episode_line(e) for e in StuckEpisode.objects.filter(run=run)]
    return lines


def _pair_line(p: GroupDay) -> str:
    rate = f" ({p.dead_letter_rate:.2%})" if p.dead_letter_rate is not None else ""
    return (
        f"{subject(p.topic, p.group)}: p99 time lag {_seconds(p.time_lag_p99)}, p99 lag "
        f"{_number(p.lag_p99)}, {duration(p.seconds_above_threshold)} above the lag "
        f"threshold; produced {p.produced:,}, consumed {p.consumed:,}; "
        f"{counted(p.retries, 'retry', 'retries')}, "
        f"{counted(p.dead_letters, 'dead letter')}{rate}; "
        f"{counted(p.stuck_episodes, 'stuck episode')}; "
        f"{counted(p.owner_changes, 'owner change')}, {counted(p.rebalances, 'rebalance')}, "
        f"{counted(p.fencing_rejections, 'fencing rejection')}"
    )


def _episode_line(e: StuckEpisode) -> str:
    if e.open or e.ended_at is None:
        until, end = f"for {duration(e.duration_s)} so far", "still open"
    else:
        until = f"to {e.ended_at:%Y-%m-%d %H:%M:%S} UTC ({duration(e.duration_s)})"
        end = e.outcome.replace("_", " ")
    error = f"; last error: {e.error}" if e.error else ""
    return (
        f"Stuck ({e.level}): {subject(e.topic, e.group, e.queue, e.key)} at offset "
        f"{e.offset} from {e.started_at:%Y-%m-%d %H:%M:%S} UTC {until} "
        f"({counted(e.retries, 'retry', 'retries')}, {e.max_behind:,} behind): {end}{error}"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
