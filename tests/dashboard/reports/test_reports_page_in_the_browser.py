"""The reports page in a real browser against the real web stack (daphne on a throw-away
database, headless Chromium): a realistic day (eight queues of which one is skewed and
stuck, stuck episodes of which one is still open, two earlier days to compare with) shows
its headline figures with their changes, draws its hourly charts with uPlot, switches
them to one queue, and lists worst queues, stuck episodes, retry hotspots, key skew and
lock churn. "Run now" queues a run and follows its progress until it ends.

The full-page screenshot is ``var/screenshots/reports-page.png`` (a stable path)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest
from playwright.sync_api import Browser, Page

from lockstep.dashboard.reports import models as m
from tests.dashboard.stack import REPO, TIMEOUT_MS, Site, chromium, log_in, running_site

SCREENSHOTS = REPO / "var" / "screenshots"
QUEUES = 8
SKEWED = 5  # the queue with the hot key: most messages, the worst lag, stuck all afternoon
GROUPS = ("billing", "mailer")


def report_day() -> date:
    """Yesterday (UTC): the day the nightly run analyses."""
    return datetime.now(tz=UTC).date() - timedelta(days=1)


# ---- the rows of three days (run in the site's process: ``manage.py shell``) -----------


def seed() -> None:
    """The report of yesterday, of the day before (a little better) and of a week before
    (calmer still), as the runner stores them."""
    day = report_day()
    for ago, load in ((0, 1.0), (1, 0.8), (7, 0.6)):
        _seed_day(day - timedelta(days=ago), load)


def _seed_day(day: date, load: float) -> None:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    run = m.AnalyticsRun.objects.create(
        day=day,
        status="ok",
        trigger="nightly",
        started_at=start + timedelta(days=1, hours=2, minutes=30),
        finished_at=start + timedelta(days=1, hours=2, minutes=33),
        duration_s=184.0,
        spark_master="local[*]",
        data_uri="var/analytics",
        messages_read=int(160_000 * load),
        events_read=int(42_000 * load),
        samples_read=int(8640 * QUEUES * 2),
        stage="done",
        progress=100,
    )
    for group in GROUPS:
        _seed_group(run, start, group, load)
    _seed_skew(run, load)


def _hourly(hour: int, load: float) -> int:
    """Messages produced in an hour: a working-day curve peaking mid-afternoon."""
    return int(800 * load * (1.2 + math.sin((hour - 8) / 24 * 2 * math.pi)))


def _seed_group(run: m.AnalyticsRun, start: datetime, group: str, load: float) -> None:
    troubled = group == "billing"
    totals = {"produced": 0, "consumed": 0}
    for hour in range(24):
        produced = _hourly(hour, load) * QUEUES
        # Billing falls behind from 13:00, when queue 5 gets stuck behind a key.
        behind = troubled and hour >= 13
        consumed = int(produced * (0.93 if behind else 1.0))
        lag = (40 + hour * 3) if not behind else 900 + (hour - 13) * 260
        time_lag = 1.5 + hour * 0.1 if not behind else 160.0 + (hour - 13) * 55 * load
        m.HourlyGroup.objects.create(
            run=run,
            topic="orders",
            group=group,
            hour=hour,
            samples=360 * QUEUES,
            lag_p50=lag // 8,
            lag_p95=lag // 2,
            lag_p99=lag,
            lag_max=int(lag * 1.3),
            time_lag_p50=time_lag / 10,
            time_lag_p95=time_lag / 2,
            time_lag_p99=time_lag,
            time_lag_max=time_lag * 1.25,
            seconds_above_threshold=3600.0 if behind and time_lag > 300 else 0.0,
            produced=produced,
            consumed=consumed,
        )
        for queue in range(QUEUES):
            share = 2.6 if queue == SKEWED else 0.77
            stuck_here = behind and queue == SKEWED
            m.HourlyQueue.objects.create(
                run=run,
                topic="orders",
                group=group,
                queue=queue,
                hour=hour,
                samples=360,
                lag_p50=(lag if stuck_here else 4) // 4,
                lag_p95=(lag if stuck_here else 9) // 2,
                lag_p99=lag if stuck_here else 9 + queue,
                lag_max=int(lag * 1.2) if stuck_here else 14 + queue,
                time_lag_p50=time_lag / 3 if stuck_here else 0.4,
                time_lag_p95=time_lag / 1.5 if stuck_here else 1.1,
                time_lag_p99=time_lag if stuck_here else 1.6 + queue * 0.2,
                time_lag_max=time_lag * 1.2 if stuck_here else 2.5 + queue * 0.2,
                produced=int(_hourly(hour, load) * share),
                consumed=int(_hourly(hour, load) * share * (0.5 if stuck_here else 1.0)),
            )
        totals["produced"] += produced
        totals["consumed"] += consumed
    queue_days = [_seed_queue_day(run, group, q, load, troubled) for q in range(QUEUES)]
    retries = sum(q.retries for q in queue_days)
    dead = sum(q.dead_letters for q in queue_days)
    episodes = _seed_episodes(run, start, group, load) if troubled else 0
    m.GroupDay.objects.create(
        run=run,
        topic="orders",
        group=group,
        samples=8640 * QUEUES,
        lag_p50=12,
        lag_p95=180 if troubled else 40,
        lag_p99=int(3400 * load) if troubled else 60,
        lag_max=int(4200 * load) if troubled else 90,
        time_lag_p50=0.6,
        time_lag_p95=38.0 * load if troubled else 2.0,
        time_lag_p99=640.0 * load if troubled else 3.2 * load,
        time_lag_max=905.0 * load if troubled else 4.0,
        seconds_above_threshold=(11 * 3600.0 * load - 3000) if troubled else 0.0,
        produced=totals["produced"],
        consumed=totals["consumed"],
        retries=retries,
        dead_letters=dead,
        dead_letter_rate=dead / totals["consumed"],
        stuck_episodes=episodes,
        owner_changes=sum(q.owner_changes for q in queue_days),
        lock_losses=sum(q.lock_losses for q in queue_days),
        fencing_rejections=sum(q.fencing_rejections for q in queue_days),
        margin_overruns=sum(q.margin_overruns for q in queue_days),
        rebalances=3 if load == 1.0 else 1,
    )
    if troubled:
        _seed_hotspots(run, load)


def _seed_queue_day(
    run: m.AnalyticsRun, group: str, queue: int, load: float, troubled: bool
) -> m.QueueDay:
    hot = troubled and queue == SKEWED
    produced = int(sum(_hourly(h, load) for h in range(24)) * (2.6 if queue == SKEWED else 0.77))
    consumed = int(produced * (0.8 if hot else 1.0))
    dead = (14 if hot else queue % 3) if troubled else 0
    return m.QueueDay.objects.create(
        run=run,
        topic="orders",
        group=group,
        queue=queue,
        samples=8640,
        lag_p50=120 if hot else 3,
        lag_p95=2100 if hot else 8 + queue,
        lag_p99=int(3400 * load) if hot else 12 + queue,
        lag_max=int(4200 * load) if hot else 20 + queue,
        time_lag_p50=20.0 if hot else 0.5,
        time_lag_p95=410.0 if hot else 1.2 + queue * 0.1,
        time_lag_p99=640.0 * load if hot else 1.8 + queue * 0.35,
        time_lag_max=905.0 * load if hot else 3.0 + queue * 0.4,
        seconds_above_threshold=(11 * 3600.0 * load - 3000) if hot else 0.0,
        produced=produced,
        consumed=consumed,
        retries=(210 if hot else 4 * queue) if troubled else queue,
        dead_letters=dead,
        dead_letter_rate=dead / consumed if consumed else None,
        stuck_episodes=(3 if hot else 1 if queue in (2, 7) else 0) if troubled else 0,
        owner_changes=(6 if queue == 3 else 2 if hot else 1) if troubled else 1,
        lock_losses=2 if troubled and queue == 3 else 0,
        fencing_rejections=1 if troubled and queue == 3 else 0,
        margin_overruns=1 if troubled and hot else 0,
    )


def _seed_episodes(run: m.AnalyticsRun, start: datetime, group: str, load: float) -> int:
    day_end = start + timedelta(hours=23, minutes=59, seconds=50)
    episodes = [
        # (queue, level, key, offset, from, to or None (open), retries, behind, outcome, error)
        (
            SKEWED,
            "queue",
            "customer-1187",
            18_204,
            start + timedelta(hours=13, minutes=2),
            None,
            0,
            4_180,
            "open",
            "",
        ),
        (
            SKEWED,
            "key",
            "customer-1187",
            11_930,
            start + timedelta(hours=4, minutes=12),
            start + timedelta(hours=4, minutes=31),
            8,
            212,
            "dead_lettered",
            "CardDeclined: issuer refused the charge",
        ),
        (
            2,
            "key",
            "customer-0420",
            3_311,
            start + timedelta(hours=9, minutes=40),
            start + timedelta(hours=9, minutes=43, seconds=20),
            3,
            17,
            "succeeded",
            "TimeoutError: payment gateway did not answer in 5 s",
        ),
        (
            7,
            "queue",
            "customer-0077",
            6_022,
            start + timedelta(hours=18, minutes=20),
            start + timedelta(hours=18, minutes=26),
            5,
            64,
            "replayed",
            "ValueError: amount must be positive",
        ),
    ]
    if load < 1.0:
        episodes = episodes[1:3]
    for queue, level, key, offset, began, ended, retries, behind, outcome, error in episodes:
        last = ended or day_end
        m.StuckEpisode.objects.create(
            run=run, topic="orders", group=group, queue=queue, level=level, key=key,
            offset=offset, started_at=began, ended_at=ended, last_seen_at=last,
            open=ended is None, duration_s=(last - began).total_seconds(), retries=retries,
            max_behind=behind, outcome=outcome, error=error,
        )  # fmt: skip
    return len(episodes)


def _seed_hotspots(run: m.AnalyticsRun, load: float) -> None:
    keys = [("customer-1187", 160, 12), ("customer-0420", 22, 1), ("customer-0077", 11, 1),
            ("customer-2301", 6, 0), ("customer-0815", 4, 0)]  # fmt: skip
    errors = [("CardDeclined", 168, 12), ("TimeoutError", 27, 1), ("ValueError", 8, 1)]
    for name, retries, dead in keys:
        m.RetryHotspot.objects.create(
            run=run, topic="orders", group="billing", kind="key", name=name,
            retries=int(retries * load), dead_letters=dead,
        )  # fmt: skip
    for name, retries, dead in errors:
        m.RetryHotspot.objects.create(
            run=run, topic="orders", group="billing", kind="error", name=name,
            retries=int(retries * load), dead_letters=dead,
        )  # fmt: skip


def _seed_skew(run: m.AnalyticsRun, load: float) -> None:
    per_day = sum(_hourly(h, load) for h in range(24))
    counts = [int(per_day * (2.6 if q == SKEWED else 0.77)) for q in range(QUEUES)]
    mean = sum(counts) / QUEUES
    for queue, messages in enumerate(counts):
        hot = queue == SKEWED
        keys = 40 if hot else 310 + queue * 7
        m.KeySkew.objects.create(
            run=run, topic="orders", queue=queue, messages=messages, keys=keys,
            top_key="customer-1187" if hot else f"customer-{queue:02d}{queue * 37 % 100:02d}",
            top_key_share=0.58 if hot else 0.012 + queue * 0.001,
            top10_share=0.81 if hot else 0.09 + queue * 0.004,
            max_over_mean=23.2 if hot else 3.7 + queue * 0.1,
            share_of_topic=messages / sum(counts), over_topic_mean=messages / mean,
        )  # fmt: skip


# ---- the browser --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("reports"), {"orders": QUEUES}) as site:
        site.manage(
            "shell", "-c", "from tests.dashboard.reports.test_reports_page_in_the_browser "
            "import seed; seed()",
        )  # fmt: skip
        yield site


@pytest.fixture(scope="module")
def page(site: Site) -> Iterator[Page]:
    with chromium() as browser:
        yield _tab(browser, site)


def _tab(browser: Browser, site: Site) -> Page:
    page = browser.new_context(viewport={"width": 1360, "height": 1000}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    log_in(page, site, "/analytics/")
    return page


@pytest.fixture(autouse=True)
def no_script_errors(page: Page) -> Iterator[None]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield
    assert errors == [], "the page's script raised"


def painted_pixels(page: Page, chart: str) -> int:
    """How many pixels of the chart's uPlot canvas are not transparent."""
    return int(
        page.evaluate(
            """(sel) => { const c = document.querySelector(sel + ' canvas');
                 const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                 let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
                 return n; }""",
            chart,
        )
    )


def test_it_shows_the_days_report_with_charts_tables_and_changes(page: Page, site: Site) -> None:
    day = report_day()
    page.goto(f"{site.url}/analytics/?topic=orders&group=billing")

    for chart in ("#lag-chart", "#time-lag-chart", "#throughput-chart"):
        page.wait_for_selector(f"{chart}[data-points='24'] canvas")
        assert painted_pixels(page, chart) > 2000, chart
    assert page.text_content(".report-day") == day.isoformat()
    lag = '.figure[data-name="time_lag_p99"]'
    assert page.text_content(f"{lag} .figure-value") == "10 min 40 s"
    before = page.locator(f'{lag} .delta[data-compared="previous"]')
    assert before.get_attribute("class") == "delta change-worse"
    assert before.locator("dd").text_content() == "+2 min 8 s +25%"
    week = page.locator(f'{lag} .delta[data-compared="week_earlier"] dd')
    assert week.text_content() == "+4 min 16 s +67%"
    # Worst queue first: the skewed one, with its lag in red; its key skew row marked.
    assert page.get_attribute("#worst-queues tbody tr:first-child", "data-queue") == str(SKEWED)
    assert page.locator("#key-skew tr.skewed").count() == 1
    assert page.get_attribute("#key-skew tr.skewed", "data-queue") == str(SKEWED)
    episodes = page.locator("#stuck-episodes tr.stuck-episode")
    assert episodes.count() == 4
    open_row = page.locator("#stuck-episodes tr.stuck-episode.open")
    assert "still open" in (open_row.text_content() or "")
    dead = page.locator('#stuck-episodes tr[data-outcome="dead_lettered"] a.dead-letters-link')
    assert (dead.get_attribute("href") or "").startswith(
        "/groups/billing/dead-letters?topic=orders"
    )
    assert page.locator("#retried-keys tbody tr").count() == 5
    assert page.get_attribute("#lock-churn tbody tr:first-child", "data-queue") == "3"
    assert page.locator("#pair-picker .pair").count() == 2
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "reports-page.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")


def test_it_switches_the_charts_to_one_queues_series(page: Page, site: Site) -> None:
    page.goto(f"{site.url}/analytics/?topic=orders&group=billing")
    page.wait_for_selector("#lag-chart canvas")
    whole_group_max = page.evaluate("Math.max(...window.lockstepReportCharts['lag-chart'].data[3])")

    page.select_option("#queue-select", "2")

    page.wait_for_function("document.getElementById('report').dataset.seriesQueue === '2'")
    queue_max = page.evaluate("Math.max(...window.lockstepReportCharts['lag-chart'].data[3])")
    assert (whole_group_max, queue_max) == (3500, 11)
    assert page.url.endswith("queue=2")
    assert page.text_content(".series-of") == "queue 2"
    assert painted_pixels(page, "#lag-chart") > 2000


def test_it_says_what_to_do_on_a_day_without_a_report(page: Page, site: Site) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    empty = report_day() - timedelta(days=3)
    page.goto(f"{site.url}/analytics/?day={empty}")

    text = page.text_content("#no-report") or ""
    assert f"python manage.py run_analytics --date {empty}" in text
    assert "write_analytics_data" in text
    assert page.get_attribute("#latest-report", "href") == f"?day={report_day()}"
    page.screenshot(path=str(SCREENSHOTS / "reports-page-no-report.png"))


def test_run_now_queues_a_run_and_follows_it_until_it_ends(page: Page, site: Site) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    day = report_day() - timedelta(days=2)
    page.goto(f"{site.url}/analytics/?day={day}")

    page.click("#run-now-button")

    page.wait_for_selector("#run-state[data-status='queued']")
    run_id = page.get_attribute("#run-state", "data-run-id")
    assert page.is_disabled("#run-now-button")
    _update_run(site, run_id, "status='running', stage='lag', progress=45")
    page.wait_for_selector("#run-state[data-status='running']")
    assert page.text_content("#run-percent") == "45%"
    assert page.text_content("#run-stage") == "lag"
    page.screenshot(path=str(SCREENSHOTS / "reports-page-running.png"))
    # The worker's Spark fails: the page reloads by itself and says why.
    with page.expect_navigation():
        _update_run(site, run_id, "status='failed', error='Py4JJavaError: the driver died'")
    assert "Py4JJavaError: the driver died" in (page.text_content("#run-error") or "")
    assert page.is_visible("#run-now-button:not([disabled])")
    page.screenshot(path=str(SCREENSHOTS / "reports-page-failed-run.png"))


def _update_run(site: Site, run_id: str | None, assignments: str) -> None:
    """Change the run in the site's database as the worker running it would."""
    site.manage(
        "shell", "-c", "from lockstep.dashboard.reports.models import AnalyticsRun; "
        f"AnalyticsRun.objects.filter(pk={int(run_id or 0)}).update({assignments})",
    )  # fmt: skip
