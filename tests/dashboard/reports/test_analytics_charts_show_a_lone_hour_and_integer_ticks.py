"""The analytics charts in a real Chromium, 1400 and 1024 px wide, light and dark, on a day
whose group has figures for three hours only (13:00 alone, 20:00 and 21:00 together) and
small lags: the lone hour is a dot one can see (not a speck between two gaps), and the
axes of whole things (messages behind, messages produced) tick at whole numbers only (no
2.5 or 12.5 messages).

Screenshots: ``var/screenshots/analytics-charts-<width>-<scheme>.png``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.dashboard.reports.test_reports_page_in_the_browser import report_day
from tests.dashboard.stack import REPO, Site, chromium, log_in, running_site, tab

SCREENSHOTS = REPO / "var" / "screenshots"
LONE_HOUR = 13
# hour -> lag p50, p95, p99, max; produced, consumed (messages)
HOURS = {LONE_HOUR: (3, 7, 11, 12, 9, 8), 20: (2, 4, 6, 9, 5, 5), 21: (1, 3, 5, 8, 4, 3)}
P99 = 3  # the p99 series' index in the offset lag chart
# A dot one can see: a disc 6 CSS px across covers some 28 px².
MIN_DOT_AREA = 28

SEED = f"""
from lockstep.dashboard.reports import models as m
from tests.dashboard.reports.test_reports_page_in_the_browser import report_day, seed
seed()
rows = m.HourlyGroup.objects.filter(run__day=report_day(), topic="orders", group="billing")
rows.exclude(hour__in={list(HOURS)!r}).delete()
for hour, (p50, p95, p99, most, produced, consumed) in {HOURS!r}.items():
    rows.filter(hour=hour).update(lag_p50=p50, lag_p95=p95, lag_p99=p99, lag_max=most,
                                  produced=produced, consumed=consumed)
"""

# The pixels around the p99 dot of ``hour`` that its series paints (the chart drawn with
# and without it; uPlot redraws after the current task), in CSS px².
DOT_AREA = """async ([hour, series]) => {
  const turn = function () { return new Promise(function (done) { setTimeout(done, 0); }); };
  const u = window.lockstepReportCharts["lag-chart"];
  const ratio = window.devicePixelRatio;
  const x = u.valToPos(hour, "x", true), y = u.valToPos(u.data[series][hour], "y", true);
  const half = Math.round(8 * ratio);
  const grab = function () {
    return u.ctx.getImageData(Math.round(x) - half, Math.round(y) - half, 2 * half, 2 * half).data;
  };
  const shown = grab();
  u.setSeries(series, { show: false });
  await turn();
  const hidden = grab();
  u.setSeries(series, { show: true });
  await turn();
  let differ = 0;
  for (let i = 0; i < shown.length; i += 4) {
    let change = 0;
    for (let c = 0; c < 4; c++) change += Math.abs(shown[i + c] - hidden[i + c]);
    if (change > 60) differ++;
  }
  return differ / (ratio * ratio);
}"""


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("analytics-charts")
    with running_site(redis_url, workdir, {"orders": 8}) as site:
        site.manage("shell", "-c", SEED)
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def _charts(browser: Browser, site: Site, width: int, scheme: str) -> Page:
    page = tab(browser, width, scheme, height=1000)
    log_in(page, site, f"/analytics/?day={report_day()}&topic=orders&group=billing")
    for chart in ("#lag-chart", "#time-lag-chart", "#throughput-chart"):
        page.wait_for_selector(f"{chart}[data-points='{len(HOURS)}'] canvas")
    return page


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1400, 1024])
def test_a_lone_hour_is_a_dot_one_can_see(
    browser: Browser, site: Site, width: int, scheme: str
) -> None:
    page = _charts(browser, site, width, scheme)

    area = page.evaluate(DOT_AREA, [LONE_HOUR, P99])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"analytics-charts-{width}-{scheme}.png"
    page.locator(".chart-grid").screenshot(path=str(shot))
    print(f"screenshot: {shot}")
    page.context.close()

    assert area >= MIN_DOT_AREA


def test_axes_of_whole_things_tick_at_whole_numbers(browser: Browser, site: Site) -> None:
    page = _charts(browser, site, 1400, "light")

    splits = {
        chart: page.evaluate(f"window.lockstepReportCharts['{chart}'].axes[1]._splits")
        for chart in ("lag-chart", "throughput-chart")
    }
    page.context.close()

    assert {
        chart: [v for v in values if not float(v).is_integer()] for chart, values in splits.items()
    } == {
        "lag-chart": [],
        "throughput-chart": [],
    }
    assert len(splits["lag-chart"]) >= 3, "too few ticks to tell"
