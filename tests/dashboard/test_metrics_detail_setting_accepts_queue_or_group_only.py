"""``LOCKSTEP_METRICS_DETAIL`` is ``queue`` unless told ``group``; anything else stops
the web side at start-up, naming the allowed values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.settings_probe import Refused, read_settings

DETAIL = "settings.LOCKSTEP_METRICS_DETAIL"


def test_it_is_per_queue_unless_told_per_group(tmp_path: Path) -> None:
    assert read_settings(tmp_path, [DETAIL]) == {DETAIL: "queue"}
    assert read_settings(tmp_path, [DETAIL], LOCKSTEP_METRICS_DETAIL=" Group ") == {DETAIL: "group"}


def test_it_refuses_any_other_detail(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="LOCKSTEP_METRICS_DETAIL must be one of queue, group"):
        read_settings(tmp_path, [DETAIL], LOCKSTEP_METRICS_DETAIL="key")
