"""Every alert of the shipped Prometheus rules (deploy/prometheus/lockstep-rules.yml)
carries a ``runbook_url`` annotation that points to its own section of
deploy/prometheus/README.md, and that section exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
README = "deploy/prometheus/README.md"


def _alerts() -> list[dict[str, Any]]:
    rules = yaml.safe_load((DEPLOY / "lockstep-rules.yml").read_text())
    return [r for g in rules["groups"] for r in g["rules"] if "alert" in r]


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub and most renderers give the headings: lower case, punctuation
    dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_alert_links_its_own_runbook_section() -> None:
    anchors = _anchors((DEPLOY / "README.md").read_text())
    alerts = _alerts()
    assert len(alerts) >= 13
    for rule in alerts:
        url = rule.get("annotations", {}).get("runbook_url", "")
        assert url == f"{README}#{rule['alert'].lower()}", rule["alert"]
        assert url.partition("#")[2] in anchors, f"{rule['alert']}: no section {url}"


def test_the_metrics_endpoint_itself_is_watched() -> None:
    exprs = {r["alert"]: " ".join(str(r["expr"]).split()) for r in _alerts()}
    assert exprs["LockstepMetricsDown"] == 'up{job="lockstep"} == 0'
    assert exprs["LockstepMetricsAbsent"] == 'absent(up{job="lockstep"})'
    assert exprs["LockstepQueueStuck"] == "lockstep_queue_stuck == 1"
