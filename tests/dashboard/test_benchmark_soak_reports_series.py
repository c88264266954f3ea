"""``manage.py benchmark soak --minutes 0.1 --json`` runs the real processes (its own
redis-server, consumer, ingester and SQLite database) for a fraction of a minute and
prints one JSON object: the probed maximum rate, a series of samples and a summary, with
messages produced, consumed and their events stored along the way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_FIELDS = {
    "t_s",
    "produced",
    "committed",
    "throughput_msgs_per_s",
    "lag",
    "lag_s",
    "consumer_rss_mb",
    "ingester_rss_mb",
    "db_bytes",
    "db_file_bytes",
    "events_stored",
}
SUMMARY_FIELDS = {
    "rss_growth_mb",
    "lag_max",
    "lag_last",
    "db_growth_bytes_per_hour",
    "flat",
    "flat_criterion",
}


def test_it_prints_a_series_and_a_summary_of_a_short_soak() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "benchmark", "soak", "--minutes", "0.1", "--json"],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        },
        capture_output=True,
        text=True,
        # A probe of 400,000 messages and 6 s of soak (six samples, a second apart): under
        # a minute here, more beside busy workers (it timed out at 110 s in a loaded run).
        timeout=240,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    series, summary = result["series"], result["summary"]
    assert result["max_consume_rate_per_s"] > 0
    # Both figures are rounded from the unrounded maximum: half of it may differ by one.
    assert abs(result["rate_per_s"] - result["max_consume_rate_per_s"] / 2) <= 1
    assert len(series) >= 3
    assert all(set(sample) == SAMPLE_FIELDS for sample in series)
    assert [s["t_s"] for s in series] == sorted(s["t_s"] for s in series)
    assert set(summary) >= SUMMARY_FIELDS
    assert set(summary["rss_growth_mb"]) == {"consumer", "ingester"}
    assert isinstance(summary["flat"], bool)
    assert series[-1]["produced"] > 0
    assert series[-1]["committed"] > 0
    assert series[-1]["events_stored"] > 0
    assert series[-1]["consumer_rss_mb"] > 0 and series[-1]["ingester_rss_mb"] > 0
    assert summary["lag_last"] == series[-1]["lag"]
