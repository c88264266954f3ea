"""The demo's held keys through the whole job (``run_analytics``) to the reports page and
its JSON: each stuck-episode row shows its message's error and retries, a duration that
is its end minus its start, and an open row shows no end and no outcome but "open"."""

from __future__ import annotations

import json
from datetime import datetime
from html.parser import HTMLParser
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from pyspark.sql import SparkSession

from lockstep.dashboard.monitor.templatetags.lockstep import seconds
from tests.analytics.builders import DAY, DECLINED, held_key_day, write

pytestmark = pytest.mark.django_db
QUERY = {"day": DAY.isoformat(), "topic": "orders", "group": "billing"}


class _EpisodeRows(HTMLParser):
    """The cells' text of each row of the page's ``#stuck-episodes`` table, and each
    error cell's full text (its ``title``)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.errors: list[str] = []
        self._in_table = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._in_table = found.get("id") == "stuck-episodes"
        elif self._in_table and tag == "tr" and "stuck-episode" in (found.get("class") or ""):
            self.rows.append([])
        elif self._in_table and tag == "td" and self.rows:
            self._cell = []
            if "error-text" in (found.get("class") or ""):
                self.errors.append(found.get("title") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _shown(analytics_uri: str, viewer_client: Client) -> dict[str, Any]:
    """The report's episodes as the JSON gives them and as the page shows them, after
    one run of the job (a run costs seconds: both are checked on the same one)."""
    samples, events = held_key_day()
    write(analytics_uri, "samples", samples)
    write(analytics_uri, "events", events)
    call_command("run_analytics", date=DAY.isoformat(), master="local[2]", stdout=StringIO())
    api = viewer_client.get("/api/v1/analytics/report", QUERY)
    assert api.status_code == 200, api.content
    page = viewer_client.get("/analytics/", QUERY)
    assert page.status_code == 200
    rows = _EpisodeRows()
    rows.feed(page.content.decode())
    return {"json": json.loads(api.content)["stuck_episodes"], "page": rows}


def test_the_json_and_the_page_rows_agree_with_their_own_columns(
    spark: SparkSession, analytics_uri: str, viewer_client: Client
):
    shown = _shown(analytics_uri, viewer_client)
    _check_json(shown["json"])
    _check_page(shown["page"])


def _check_json(rows: list[dict[str, Any]]) -> None:
    episodes = {e["key"]: e for e in rows}
    assert set(episodes) == {"order-200", "order-100"}
    for key, e in episodes.items():
        assert (e["retries"], e["error"]) == (3, DECLINED.format(key.split("-")[1]))
        start = datetime.fromisoformat(e["started_at"])
        if e["open"]:
            assert (e["ended_at"], e["outcome"]) == (None, "open")
            end = datetime.fromisoformat(e["last_seen_at"])
        else:
            assert e["outcome"] == "replayed"
            end = datetime.fromisoformat(e["ended_at"])
        assert e["duration_s"] == (end - start).total_seconds()
    assert episodes["order-200"]["duration_s"] == 205.0  # 18:20:00 to 18:23:25


def _check_page(page: _EpisodeRows) -> None:
    by_key = {row[2]: row for row in page.rows}
    assert set(by_key) == {"order-200", "order-100"}
    replayed, held = by_key["order-200"], by_key["order-100"]
    # Level, Queue, Key, Start, End, Duration, Offset, Retries, Behind, Outcome, Error
    assert (replayed[5], replayed[7], replayed[9]) == (seconds(205.0), "3", "replayed dead letters")
    assert (held[4], held[5], held[7]) == ("still open", f"{seconds(540.0)} so far", "3")
    assert held[9] == "open"
    assert sorted(page.errors) == sorted(DECLINED.format(n) for n in ("100", "200"))
