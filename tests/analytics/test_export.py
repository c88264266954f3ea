from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dashboard.monitor.models import Event
from dashboard.reports.export import export_events, prune_exports

NOON = datetime(2025, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)


@pytest.mark.django_db
def test_it_exports_the_window_as_json_lines_with_details_as_a_string(tmp_path: Path):
    Event.objects.create(
        stream_id="1-0",
        type="lag_sampled",
        ts=NOON,
        topic="orders",
        group="mailer",
        queue=2,
        details={"lag": 3, "committed_offset": 9},
    )
    Event.objects.create(
        stream_id="2-0",
        type="lock_acquired",
        ts=NOON + timedelta(hours=1),
        topic="orders",
        group="mailer",
        queue=2,
        token=4,
        consumer="w1",
    )
    Event.objects.create(stream_id="0-0", type="lag_sampled", ts=NOON - timedelta(hours=2))
    path = tmp_path / "out" / "events.jsonl"

    count = export_events(path, NOON - timedelta(hours=1), NOON + timedelta(hours=1))

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert count == 1  # the window is [since, until): the event at `until` is outside
    assert lines == [
        {
            "id": "1-0",
            "type": "lag_sampled",
            "ts_ms": 1740830400123,
            "topic": "orders",
            "group": "mailer",
            "queue": 2,
            "key": "",
            "token": None,
            "consumer": "",
            "details": '{"lag":3,"committed_offset":9}',
        }
    ]
    assert list(path.parent.iterdir()) == [path]  # no partial file left behind


def test_it_keeps_only_the_newest_exports(tmp_path: Path):
    for n in range(4):
        path = tmp_path / f"events-run{n}-x.jsonl"
        path.write_text("")
        os.utime(path, (1_000 + n, 1_000 + n))
    (tmp_path / "notes.txt").write_text("not an export")

    deleted = prune_exports(tmp_path, keep=2)

    assert sorted(p.name for p in deleted) == ["events-run0-x.jsonl", "events-run1-x.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "events-run2-x.jsonl",
        "events-run3-x.jsonl",
        "notes.txt",
    ]
