"""A duration, a count and a rate read the same wherever they are shown: the pages'
scripts write them through ``static/format.js``, which gives, in a real Chromium, exactly
the text of the server's formatters (``web/formatting.py``) for the same values; and the
cells a script re-renders (the overview's and the queue page's) and those only the server
renders (the group page, the analytics tables) read in that one format: ``1 min 7 s``
(not ``1 m 7 s``), ``4,030`` (not ``4030``), ``replayed dead letters``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page

from lockstep.dashboard.web import formatting
from lockstep.workers import keys
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.reports.test_reports_page_in_the_browser import report_day
from tests.dashboard.stack import REPO, Site, chromium, log_in, running_site, tab

FORMAT_JS = REPO / "dashboard" / "static" / "format.js"
TOPIC, GROUP = "orders", "billing"
BACKLOG = 4030  # messages nobody consumed: a lag with a thousands separator
BEHIND_S = 67  # how old the oldest of them is: a time lag of a minute and some seconds

# Values the pages format: none, text from JSON or a form, whole and fractional numbers,
# exact halves (where rounding rules differ), the unit boundaries, large and negative ones.
VALUES: list[Any] = [
    None, "", "12.5", " 7 ", True, 0, 0.0, -0.0, 0.04, 0.05, 0.125, 0.25, 0.35, 0.75, 1,
    1.25, 2.5, 4.45, 9.94, 9.95, 9.96, 9.99, 10, 10.5, 42, 59.999, 60, 67, 67.9, 245,
    300, 3599.9, 3600, 3660, 7980, 7999, 86_400, 90_061.5, 123_456.789, 4030, 2534,
    1_234_567.75, 2.25, 2.35, 999.95, 1_000_000, 2**53, 1e21, -1, -0.25, -1234.5,
]  # fmt: skip
DURATIONS: list[float] = [0, 0.9, 5, 59, 59.99, 60, 61, 119, 300, 305, 3599, 3600, 3659, 3660,
                          7980, 86_399, 86_400, 90_061, -5, -0.5]  # fmt: skip


def _write_backlog(client: redis.Redis) -> None:
    """``BACKLOG`` messages on queue 0 of ``TOPIC``, produced ``BEHIND_S`` ago, that
    ``GROUP`` never consumed (the produce script's layout: entry ``<offset>-1``)."""
    ref = QueueRef(TOPIC, 0)
    produced_ms = int(time.time() * 1000) - BEHIND_S * 1000
    pipe = client.pipeline(transaction=False)
    for offset in range(BACKLOG):
        fields = {"k": f"k{offset}", "b": b"x", "h": "{}", "t": produced_ms}
        pipe.xadd(keys.stream(ref), fields, id=f"{offset}-1")  # type: ignore[arg-type]
    pipe.set(keys.sequence(ref), BACKLOG)
    pipe.execute()
    register_group(client, TOPIC, GROUP)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("formats")
    with running_site(redis_url, workdir, {TOPIC: 1}) as site:
        client = redis.Redis.from_url(redis_url)
        _write_backlog(client)
        client.close()
        site.manage(
            "shell", "-c", "from tests.dashboard.reports.test_reports_page_in_the_browser "
            "import seed; seed()",
        )  # fmt: skip
        yield site


@pytest.fixture(scope="module")
def page(browser: Browser, site: Site) -> Iterator[Page]:
    page = tab(browser)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, site, "/")
    yield page
    page.context.close()
    assert errors == [], "a page's script raised"


def _in_the_browser(browser: Browser, function: str, values: list[Any]) -> list[str]:
    page = browser.new_page()
    try:
        page.add_script_tag(path=str(FORMAT_JS))
        shown: list[str] = page.evaluate(
            f"(values) => values.map((v) => window.LockstepFormat.{function}(v))", values
        )
    finally:
        page.close()
    return shown


@pytest.mark.parametrize("function", ["seconds", "count", "rate"])
def test_its_script_formats_every_value_as_the_server_does(browser: Browser, function: str) -> None:
    server = [getattr(formatting, function)(v) for v in VALUES]

    shown = _in_the_browser(browser, function, VALUES)

    assert dict(zip(map(repr, VALUES), shown, strict=True)) == dict(
        zip(map(repr, VALUES), server, strict=True)
    )


def test_its_script_writes_a_duration_as_the_server_does(browser: Browser) -> None:
    assert _in_the_browser(browser, "duration", DURATIONS) == list(
        map(formatting.duration, DURATIONS)
    )


def _settled_cell(page: Page, selector: str) -> tuple[str, str]:
    cell = page.locator(selector).first
    return (cell.text_content() or "").strip(), cell.get_attribute("data-value") or ""


def test_the_overview_shows_the_time_lag_and_the_lag_in_the_shared_format(
    page: Page, site: Site
) -> None:
    page.goto(f"{site.url}/")
    row = f'tr.queue-row[data-topic="{TOPIC}"][data-group="{GROUP}"][data-queue="0"]'
    page.wait_for_function(
        f"""() => {{ const r = document.querySelector('{row}');
             return r && Number(r.querySelector('.time-lag').dataset.value) >= {BEHIND_S}; }}"""
    )
    # The script has rendered the rows (over the server's), and re-renders them live.
    page.wait_for_function("Number(document.getElementById('overview').dataset.messages) >= 1")

    text, value = _settled_cell(page, f"{row} .time-lag")
    assert re.fullmatch(r"\d+ min( \d+ s)?", text), text
    assert text == formatting.seconds(value)
    assert page.text_content(f"{row} .lag") == "4,030"
    assert page.text_content(f"{row} .max-offset") == "4,030"
    assert page.text_content('#fleet-totals [data-total="lag"]') == "4,030"
    worst = page.locator("#worst-rows tr.worst-row").first.locator("td")
    assert worst.nth(2).text_content() == "4,030"
    assert re.fullmatch(r"\d+ min( \d+ s)?", worst.nth(3).text_content() or "")


def test_the_group_and_queue_pages_show_them_in_the_same_format(page: Page, site: Site) -> None:
    page.goto(f"{site.url}/topics/{TOPIC}/groups/{GROUP}")
    assert page.text_content("#group-summary .total-lag") == "4,030"
    assert page.text_content("tr.group-queue .lag") == "4,030"
    assert page.text_content("tr.group-queue .max-offset") == "4,030"

    page.goto(f"{site.url}/topics/{TOPIC}/queues/0")
    # The script renders the groups' row over the server's, then says when it was updated.
    page.wait_for_selector("#updated-at time")
    queue_row = f'#queue-groups tr.queue-group[data-group="{GROUP}"]'
    assert page.text_content(f"{queue_row} .lag") == "4,030"
    assert re.fullmatch(r"\d+ min( \d+ s)?", page.text_content(f"{queue_row} .time-lag") or "")


def test_the_analytics_stuck_table_says_replayed_dead_letters(page: Page, site: Site) -> None:
    page.goto(f"{site.url}/analytics/?day={report_day()}&topic={TOPIC}&group={GROUP}")

    outcome = page.locator('#stuck-episodes tr[data-outcome="replayed"] .outcome-cell')
    assert " ".join(outcome.inner_text().split()) == "replayed dead letters"
    assert " ".join((outcome.text_content() or "").split()) == "replayed dead letters"
