"""A viewer chooses the zone times are shown in (the header's menu), in a real Chromium
whose own zone is a third one (America/New_York): the choice is remembered for the user
(a new session shows it), server-rendered and script-rendered times are in it with UTC in
their title, and a time typed into the snooze field is read in it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, Page

from tests.dashboard.stack import TIMEOUT_MS, Site, chromium, log_in, running_site

ZONE = "Europe/Paris"
PARIS = ZoneInfo(ZONE)
SINCE = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)  # summer: Paris is UTC+2, 14:00
OPEN_ALERT = f"""
from datetime import datetime
from lockstep.dashboard.alerts.models import Alert
alert = Alert.objects.create(
    rule="queue_stuck", fingerprint="queue_stuck|orders|billing|1||", severity="critical",
    topic="orders", group="billing", queue=1, summary="billing is stuck on orders queue 1",
    since=datetime.fromisoformat({SINCE.isoformat()!r}),
)
print(alert.pk)
"""
SNOOZED = "from lockstep.dashboard.alerts.models import Alert; "
SNOOZED += "print(Alert.objects.get(pk={pk}).snoozed_until.isoformat())"


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("zones"), {"orders": 2}) as site:
        yield site


@pytest.fixture(scope="module")
def alert_id(site: Site) -> int:
    return int(site.manage("shell", "-c", OPEN_ALERT).split()[-1])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


def _session(browser: Browser, site: Site, path: str) -> Page:
    """A new browser session (no cookie of an earlier one), logged in at ``path``."""
    context = browser.new_context(timezone_id="America/New_York")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, site, path)
    return page


def _choose(page: Page, zone: str) -> None:
    page.click(".user-menu summary")
    page.select_option("#time-zone-select", zone)
    with page.expect_navigation():
        page.click(".time-zone-form button[type=submit]")


def _time(page: Page, selector: str) -> tuple[str, str]:
    """The text and the hover title of the ``<time>`` in ``selector``."""
    time = page.locator(f"{selector} time").first
    return (time.text_content() or "").strip(), time.get_attribute("title") or ""


def test_it_remembers_the_chosen_zone_and_shows_utc_on_hover(
    browser: Browser, site: Site, alert_id: int
) -> None:
    first = _session(browser, site, f"/alerts/{alert_id}")
    _choose(first, ZONE)
    assert first.url == f"{site.url}/alerts/{alert_id}"
    first.context.close()

    page = _session(browser, site, f"/alerts/{alert_id}")
    assert page.get_attribute("body", "data-time-zone") == ZONE
    assert (page.text_content("#viewer-zone") or "").strip() == ZONE
    since = page.locator("tr", has_text="condition since")
    assert _time(page, "tr:has(th:text-is('condition since'))") == (
        "2026-07-01 14:00:00",
        "2026-07-01 12:00:00 UTC",
    ), since.inner_html()

    # Times the page's script renders (the overview's "updated") are in the zone too.
    page.goto(f"{site.url}/")
    page.wait_for_selector("#live-status[data-state=live]")
    page.wait_for_function("Number(document.getElementById('overview').dataset.seq) >= 0")
    shown, title = _time(page, "#updated-at")
    utc = datetime.strptime(title, "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
    assert shown == f"{utc.astimezone(PARIS):%Y-%m-%d %H:%M:%S}"
    assert abs(datetime.now(UTC) - utc) < timedelta(minutes=2)
    page.context.close()


def test_it_reads_the_snooze_time_in_the_shown_zone(
    browser: Browser, site: Site, alert_id: int
) -> None:
    page = _session(browser, site, f"/alerts/{alert_id}")
    _choose(page, ZONE)
    field = page.locator("#snooze-until")
    label = page.locator("label", has=field)
    assert ZONE in (label.text_content() or "")
    until = (datetime.now(PARIS) + timedelta(days=3)).replace(
        hour=9, minute=30, second=0, microsecond=0
    )

    field.fill(f"{until:%Y-%m-%d %H:%M}")
    with page.expect_navigation():
        page.click("#acknowledge-form button[type=submit]")

    stored = site.manage("shell", "-c", SNOOZED.format(pk=alert_id)).split()[-1]
    assert datetime.fromisoformat(stored) == until.astimezone(UTC)
    assert stored.endswith("+00:00")
    page.context.close()
