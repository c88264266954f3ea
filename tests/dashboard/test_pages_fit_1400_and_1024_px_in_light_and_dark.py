"""Every page of the dashboard, with data, in a real Chromium at 1400 and 1024 px wide, in
the light and the dark colour scheme: nothing overflows its panel, no table header is
cut, a toast covers nothing of the page, the dark scheme is dark with readable text, and
every time is 24-hour (``YYYY-MM-DD HH:MM:SS``, in a ``<time>`` whose title is UTC), on
the charts' axes too.

One site and one browser for the module; each (width, scheme) visits every page in turn
and reports every problem it saw at once."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.dashboard.seeded_pages import Seeded, seeded_site
from tests.dashboard.stack import ARTIFACTS, TIMEOUT_MS, chromium, log_in

# Times as the pages show them, and as their hover titles (UTC) say them.
TIME = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2}(\.\d{3})?)?$"
UTC_TITLE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2}(\.\d{3})?)? UTC$"
AXIS_TIME = r"^(\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}(:\d{2})?$"
MIN_CONTRAST = 4.5

# The checks run inside each page (window.lockstepPageChecks).
CHECKS = Path(__file__).with_name("page_checks.js")
PATTERNS = {"time": TIME, "utcTitle": UTC_TITLE, "axisTime": AXIS_TIME}

ALERT_SERIAL = count(1)
OPEN_AND_PUBLISH = """
from django.utils import timezone
from lockstep.dashboard.alerts import push
from lockstep.dashboard.alerts.models import Alert
alert = Alert.objects.create(
    rule="consumer_lost", fingerprint="consumer_lost|toast-{n}", severity="warning",
    topic="orders", group="billing", summary="a consumer of billing stopped heartbeating ({n})",
    since=timezone.now(),
)
assert push.publish(opened=[alert])
print(alert.pk)
"""


@pytest.fixture(scope="module")
def seeded(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_site(redis_url, tmp_path_factory.mktemp("every-page")) as seeded:
        yield seeded


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def _open(browser: Browser, seeded: Seeded, width: int, scheme: str) -> Page:
    context = browser.new_context(
        viewport={"width": width, "height": 800},
        color_scheme=scheme,  # type: ignore[arg-type]
        timezone_id="America/Los_Angeles",  # the browser's zone must not leak into times
    )
    context.add_init_script(path=str(CHECKS))
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, seeded.site, "/")
    return page


def _settled(page: Page, path: str) -> None:
    """Loaded, and the charts drawn where a page has them, with the pointer over the first
    one (its legend then shows the time under the pointer, in text)."""
    page.wait_for_load_state("load")
    if "/queues/" in path:
        page.wait_for_function(
            "window.lockstepQueueChart && window.lockstepQueueChart.axes[0]._values"
        )
    if path.startswith("/analytics"):
        page.wait_for_function("Object.keys(window.lockstepReportCharts || {}).length >= 3")
    if "/queues/" in path or path.startswith("/analytics"):
        page.locator(".uplot .u-over").first.hover()


def _colour_problems(page: Page, scheme: str) -> list[str]:
    """Text readable on the body, on a panel and in a table header (contrast), and, in the
    dark scheme, a dark background with light text."""
    colours = page.evaluate("window.lockstepPageChecks.colours()")
    problems = [
        f"{what} text contrast {colours[what]:.2f}"
        for what in ("body", "panel", "header")
        if what in colours and colours[what] < MIN_CONTRAST
    ]
    if scheme == "dark" and not (colours["bg"] < 0.05 and colours["fg"] > 0.6):
        problems.append(f"not dark (background {colours['bg']:.2f}, text {colours['fg']:.2f})")
    return problems


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1400, 1024])
def test_every_page_fits_reads_well_and_shows_24_hour_times(
    browser: Browser, seeded: Seeded, width: int, scheme: str
) -> None:
    page = _open(browser, seeded, width, scheme)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    problems: list[str] = []
    pages_with_times = 0
    charts = 0
    for path in seeded.pages():
        page.goto(f"{seeded.site.url}{path}")
        _settled(page, path)
        seen = page.evaluate("(p) => window.lockstepPageChecks.problems(p)", PATTERNS)
        problems += [f"{path}: {p}" for p in seen["problems"]]
        pages_with_times += seen["times"] > 0
        charts += seen["charts"]
        problems += [f"{path}: {p}" for p in _colour_problems(page, scheme)]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"every-page-{width}-{scheme}.png"), full_page=True)

    # A toast on a long page full of links: it may cover none of the content.
    page.goto(f"{seeded.site.url}{seeded.pages()[-1]}")
    page.wait_for_selector("#alert-toasts[data-live='1']", state="attached")
    seeded.site.manage("shell", "-c", OPEN_AND_PUBLISH.format(n=next(ALERT_SERIAL)))
    page.wait_for_selector(".alert-toast")
    covered = page.evaluate("window.lockstepPageChecks.covered()")
    page.screenshot(path=str(ARTIFACTS / f"toast-{width}-{scheme}.png"))
    page.click(".alert-toast .close")  # dismissable
    page.wait_for_selector(".alert-toast", state="detached")
    page.context.close()

    assert problems == []
    assert covered == [], "a toast covers the page"
    assert pages_with_times >= 12, "times are not rendered as <time> elements"
    assert charts >= 4, "the queue chart and the report's charts were not checked"
    assert errors == [], "a page's script raised"
