"""Plain-Python reference implementations of the reports (docs/analytics.md §3-4), written
from the definitions and not from the Spark code, to check the transforms against."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]


def nearest_rank(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered)), 1) - 1]


def _hour(ts_ms: int) -> int:
    return (ts_ms // 3_600_000) % 24


def hourly_queue(samples: list[Row], threshold_s: float, max_gap_s: float) -> dict[tuple, Row]:
    """(topic, group, queue, hour) → lag figures, seconds above, consumed."""
    per_queue: dict[tuple, list[Row]] = defaultdict(list)
    for s in samples:
        per_queue[(s["topic"], s["group"], s["queue"])].append(s)
    out: dict[tuple, Row] = {}
    for place, rows in per_queue.items():
        rows.sort(key=lambda s: s["ts_ms"])
        above: dict[int, float] = defaultdict(float)
        for this, after in zip(rows, [*rows[1:], None], strict=True):
            if this["time_lag_s"] > threshold_s and after is not None:
                gap = (after["ts_ms"] - this["ts_ms"]) / 1000
                above[_hour(this["ts_ms"])] += min(gap, max_gap_s)
        by_hour: dict[int, list[Row]] = defaultdict(list)
        for s in rows:
            by_hour[_hour(s["ts_ms"])].append(s)
        previous_last = rows[0]["committed_offset"]
        for hour in sorted(by_hour):
            hour_rows = by_hour[hour]
            lags = [s["lag"] for s in hour_rows]
            times = [s["time_lag_s"] for s in hour_rows]
            last = hour_rows[-1]["committed_offset"]
            out[(*place, hour)] = {
                "samples": len(hour_rows),
                "lag_p50": nearest_rank(lags, 0.5),
                "lag_p95": nearest_rank(lags, 0.95),
                "lag_p99": nearest_rank(lags, 0.99),
                "lag_max": max(lags),
                "time_lag_p50": nearest_rank(times, 0.5),
                "time_lag_p99": nearest_rank(times, 0.99),
                "seconds_above_threshold": above[hour],
                "consumed": max(last - previous_last, 0),
            }
            previous_last = last
    return out


def produced_per_hour(messages: Iterable[Row]) -> Counter:
    return Counter((m["topic"], m["queue"], _hour(m["produced_ms"])) for m in messages)


def key_skew(messages: list[Row]) -> dict[tuple, Row]:
    per_queue: dict[tuple, Counter] = defaultdict(Counter)
    for m in messages:
        per_queue[(m["topic"], m["queue"])][m["key"]] += 1
    topic_totals: dict[str, list[int]] = defaultdict(list)
    for (topic, _), keys in per_queue.items():
        topic_totals[topic].append(sum(keys.values()))
    out = {}
    for (topic, queue), keys in per_queue.items():
        total = sum(keys.values())
        ranked = sorted(keys.items(), key=lambda kv: (-kv[1], kv[0]))
        totals = topic_totals[topic]
        out[(topic, queue)] = {
            "messages": total,
            "keys": len(keys),
            "top_key": ranked[0][0],
            "top_key_share": ranked[0][1] / total,
            "top10_share": sum(n for _, n in ranked[:10]) / total,
            "max_over_mean": ranked[0][1] / (total / len(keys)),
            "share_of_topic": total / sum(totals),
            "over_topic_mean": total / (sum(totals) / len(totals)),
        }
    return out


def retry_hotspots(events: list[Row], top_n: int) -> list[tuple]:
    """(group, kind, name, retries, dead_letters) in rank order per group and kind."""
    tallies: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        if e["type"] not in ("consume_failed", "dead_lettered"):
            continue
        for kind, name in (("key", e["key"]), ("error", e["error_type"])):
            if not name:
                continue
            tally = tallies[(e["topic"], e["group"], kind, name)]
            if e["type"] == "consume_failed":
                tally[0] += e["n"] if e["n"] is not None else 1
            else:
                tally[1] += 1
    ranked: dict[tuple, list[tuple]] = defaultdict(list)
    for (topic, group, kind, name), (retries, dead) in tallies.items():
        ranked[(topic, group, kind)].append((-retries, -dead, name))
    out = []
    for topic, group, kind in sorted(ranked):
        for retries, dead, name in sorted(ranked[(topic, group, kind)])[:top_n]:
            out.append((group, kind, name, -retries, -dead))
    return out


def queue_episodes(samples: list[Row], min_s: float) -> list[tuple]:
    """Queue-level episodes as (queue, offset, start_ms, end_ms | None, open)."""
    per_queue: dict[tuple, list[Row]] = defaultdict(list)
    for s in samples:
        per_queue[(s["topic"], s["group"], s["queue"])].append(s)
    out = []
    for (_, _, queue), rows in per_queue.items():
        rows.sort(key=lambda s: s["ts_ms"])
        i = 0
        while i < len(rows):
            if rows[i]["lag"] <= 0:
                i += 1
                continue
            j = i
            while (
                j + 1 < len(rows)
                and rows[j + 1]["lag"] > 0
                and rows[j + 1]["committed_offset"] == rows[i]["committed_offset"]
            ):
                j += 1
            start, last = rows[i]["ts_ms"], rows[j]["ts_ms"]
            end = rows[j + 1]["ts_ms"] if j + 1 < len(rows) else None
            if (last - start) / 1000 >= min_s:  # known blocked at least the threshold
                duration = ((end if end is not None else last) - start) / 1000
                out.append((queue, rows[i]["committed_offset"], start, end, end is None, duration))
            i = j + 1
    return sorted(out)


_OUTCOMES = {
    "dead_lettered": "dead_lettered",
    "dead_letter_replayed": "replayed",
    "dead_letter_discarded": "discarded",
}


def key_episodes(samples: list[Row], events: list[Row], min_s: float) -> dict[tuple, Row]:
    """Key-level episodes, (group, queue, key, offset) → start_ms, end_ms, open,
    duration_s, retries, error, outcome, from docs/analytics.md §4 as written: the
    message's first failure starts it (a held key's hold continues the failures of its
    dead-lettered message); the key's release, its message's dead letter or the first
    sample without it, at or after its last sighting, ends it."""
    sightings: dict[tuple, list[tuple[int, Row]]] = defaultdict(list)
    sample_times: dict[tuple, list[int]] = defaultdict(list)
    for s in samples:
        sample_times[(s["topic"], s["group"], s["queue"])].append(s["ts_ms"])
        for b in s["blocked_keys"]:
            place = (s["topic"], s["group"], s["queue"], b["key"], b["offset"])
            sightings[place].append((s["ts_ms"], b))
    out = {}
    for (topic, group, queue, key, offset), seen in sightings.items():
        seen.sort(key=lambda pair: pair[0])
        last = seen[-1][0]
        failing = [b for _, b in seen if not b["held"]]
        ats = [e for e in events if (e["topic"], e["group"], e["queue"]) == (topic, group, queue)]
        failures = sorted(
            (
                e
                for e in ats
                if e["offset"] == offset and e["type"] in ("consume_failed", "dead_lettered")
            ),
            key=lambda e: e["ts_ms"],
        )
        chains: list[list[Row]] = [[]]  # a dead letter ends its message's chain of failures
        for e in failures:
            chains[-1].append(e)
            if e["type"] == "dead_lettered":
                chains.append([])
        begun = [c for c in chains if c and c[0]["ts_ms"] <= last]
        chain = begun[-1] if begun else []
        sampled_start = min(b["since_ms"] for b in failing or [b for _, b in seen])
        start = min([sampled_start, *(e["ts_ms"] for e in chain[:1])])
        if (last - start) / 1000 < min_s:
            continue
        ends = [t for t in sample_times[(topic, group, queue)] if t > last][:1]
        ends += [
            e["ts_ms"]
            for e in ats
            if e["type"] == "key_released" and e["key"] == key and e["ts_ms"] >= last
        ]
        ends += [e["ts_ms"] for e in chain if e["type"] == "dead_lettered" and e["ts_ms"] >= last]
        end = min(ends) if ends else None
        outcome = "open"
        if end is not None:
            decided = [
                e
                for e in ats
                if e["type"] in _OUTCOMES and e["offset"] == offset and e["ts_ms"] >= start
            ]
            decided.sort(key=lambda e: e["ts_ms"])
            outcome = _OUTCOMES[decided[-1]["type"]] if decided else "succeeded"
        errors = [json.loads(e["details"]).get("error") for e in chain]
        retries = [e["reconsume_times"] for e in chain] + [b["retries"] for b in failing]
        out[(group, queue, key, offset)] = {
            "start_ms": start,
            "end_ms": end,
            "open": end is None,
            "duration_s": ((end if end is not None else last) - start) / 1000,
            "retries": max([r for r in retries if r is not None], default=0),
            "error": next(
                (x for x in reversed(errors) if x), failing[-1]["error"] if failing else ""
            ),
            "outcome": outcome,
        }
    return out
