"""The queue page's chart in a real Chromium, 1400 and 1024 px wide, light and dark, over a
quarter of an hour of lag samples with commits between them: the time axis's labels
never touch, whatever width the chart is drawn at (measured in the axis's own font: no
``02:37:0002:37:30``), the offset and lag axes tick at whole numbers, and the hover
readout shows a value for every series at every point, a commit's point (which carries
only the committed offset) too.

Screenshots: ``var/screenshots/queue-chart-<width>-<scheme>.png``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page

from lockstep.workers import keys
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.stack import REPO, Site, chromium, log_in, running_site, tab

SCREENSHOTS = REPO / "var" / "screenshots"
TOPIC, GROUP, QUEUE = "orders", "billing", 0
MAX_OFFSET = 41_250
COMMITTED = 40_800  # now; the samples climb to it
GAP_PX = 4  # the least room between two labels that still reads as two

# Every 10 s for the last 15 minutes a lag sample, and 5 s after each a commit (only the
# committed offset): as the ingester stores them.
SEED = f"""
import itertools, time
from datetime import UTC, datetime
from lockstep.dashboard.web.store.models import Event
now_ms = int(time.time() * 1000)
ids = itertools.count()
def at(ms):
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
rows = []
for step in range(90):
    t = now_ms - 900_000 + step * 10_000
    committed = 30_000 + step * 120
    rows.append(Event(stream_id=f"{{t}}-{{next(ids)}}", type="lag_sampled", ts=at(t),
        topic="{TOPIC}", group="{GROUP}", queue={QUEUE},
        details={{"max_offset": {MAX_OFFSET}, "committed_offset": committed,
                 "lag": {MAX_OFFSET} - committed}}))
    rows.append(Event(stream_id=f"{{t + 5000}}-{{next(ids)}}", type="offset_committed",
        ts=at(t + 5000), topic="{TOPIC}", group="{GROUP}", queue={QUEUE},
        details={{"offset": committed + 60}}))
Event.objects.bulk_create(rows)
"""

# The time axis's labels as drawn, over the last ``spans`` seconds (as a zoom shows them)
# at every chart width from 300 px to the page's (the room uPlot leaves between ticks
# changes with both): the pairs of neighbours closer than ``gap`` px, each label's box
# measured in the axis's font. uPlot redraws after the current task: each is read after.
TOUCHING_LABELS = """async ([gap, spans]) => {
  const turn = function () { return new Promise(function (done) { setTimeout(done, 0); }); };
  const u = window.lockstepQueueChart;
  const axis = u.axes[0];
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = axis.font[0].replace(/[\\d.]+px/, axis.font[2] + "px");
  const full = u.width;
  const end = u.data[0][u.data[0].length - 1];
  const found = [];
  let drawn = 0;
  for (const span of spans) {
    for (let width = 300; width <= full; width += 10) {
      u.setSize({ width: width, height: u.height });
      u.setScale("x", { min: end - span, max: end });
      await turn();
      const boxes = axis._splits.map(function (s, i) {
        const text = String(axis._values[i] ?? "");
        const w = ctx.measureText(text).width;
        const x = u.valToPos(s, "x");
        return { text: text, left: x - w / 2, right: x + w / 2 };
      }).filter(function (b) { return b.text !== ""; });
      drawn += boxes.length;
      for (let i = 1; i < boxes.length; i++) {
        if (boxes[i].left - boxes[i - 1].right < gap) {
          found.push(span + " s at " + width + " px: " + boxes[i - 1].text + boxes[i].text);
        }
      }
    }
  }
  u.setSize({ width: full, height: u.height });
  u.setScale("x", { min: u.data[0][0], max: end });
  await turn();
  return { touching: found, drawn: drawn };
}"""
# Spans the chart shows: a young queue's minutes, a zoom, the whole quarter of an hour.
SPANS_S = [60, 120, 180, 240, 300, 450, 600, 900]

# The readout with the pointer on each point of the chart in turn: the legend's text of
# max offset, committed and lag there.
READOUTS = """() => {
  const u = window.lockstepQueueChart;
  const out = [];
  for (let i = 0; i < u.data[0].length; i++) {
    u.setCursor({ left: u.valToPos(u.data[0][i], "x"), top: 10 });
    const cells = [...u.root.querySelectorAll(".u-legend .u-series")].slice(1)
      .map(function (row) { return row.querySelector(".u-value").textContent; });
    out.push({ at: u.data[0][i], committedOnly: u.data[1][i] === null, shown: cells });
  }
  return out;
}"""


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("queue-chart")
    with running_site(redis_url, workdir, {TOPIC: 1}) as site:
        client = redis.Redis.from_url(redis_url)
        register_group(client, TOPIC, GROUP)
        ref = QueueRef(TOPIC, QUEUE)
        client.set(keys.sequence(ref), MAX_OFFSET)
        client.hset(keys.offset(ref, GROUP), mapping={"committed": COMMITTED, "token": 1})
        client.close()
        site.manage("shell", "-c", SEED)
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def _chart_page(browser: Browser, site: Site, width: int, scheme: str) -> Page:
    page = tab(browser, width, scheme)
    log_in(page, site, f"/topics/{TOPIC}/queues/{QUEUE}")
    page.wait_for_function(
        "window.lockstepQueueChart && window.lockstepQueueChart.axes[0]._values"
        " && window.lockstepQueueChart.data[0].length > 100"
    )
    return page


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1400, 1024])
def test_its_time_labels_never_touch_at_any_width(
    browser: Browser, site: Site, width: int, scheme: str
) -> None:
    page = _chart_page(browser, site, width, scheme)

    seen: dict[str, Any] = page.evaluate(TOUCHING_LABELS, [GAP_PX, SPANS_S])
    page.locator("#queue-chart .u-over").hover()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"queue-chart-{width}-{scheme}.png"
    page.locator("#queue-chart").screenshot(path=str(shot))
    print(f"screenshot: {shot}")
    offset_splits = page.evaluate("window.lockstepQueueChart.axes[1]._splits")
    lag_splits = page.evaluate("window.lockstepQueueChart.axes[2]._splits")
    page.context.close()

    assert seen["touching"] == []
    assert seen["drawn"] > 100, "the axis drew no labels to compare"
    assert all(float(v).is_integer() for v in offset_splits + lag_splits)


def test_its_readout_shows_every_series_at_every_point(browser: Browser, site: Site) -> None:
    page = _chart_page(browser, site, 1400, "light")

    readouts: list[dict[str, Any]] = page.evaluate(READOUTS)
    page.context.close()

    assert any(r["committedOnly"] for r in readouts), "no commit's point to hover"
    blank = [r for r in readouts if not all(_is_count(v) for v in r["shown"])]
    assert blank == []


def _is_count(text: str) -> bool:
    """``41,250``: a whole number as the table writes it."""
    return text != "" and text.replace(",", "").isdigit()
