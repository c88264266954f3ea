"""In a real Chromium against the real stack, at 1400 and 1024 px, light and dark: the
confirmation dialogs of the dead-letter pages name what they act on, by key and offset,
in the order they act: discarding three ticked rows says "Discard 3 dead letters:
order-7 @ 5, order-100 @ 17, order-900 @ 22." (a mis-ticked row shows there, not under a
collapsed "Keys"); every row of the page names the first ten and "… and 5 more."; replaying
selected or all matching, and the one dead letter's Replay / Discard… buttons, say the
same. Nothing is confirmed: each dialog is cancelled. A screenshot of each three-row
discard dialog goes to a temporary directory, printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page

from lockstep.workers.topics import create_topic, register_group
from tests.dashboard.deadletters.helpers import add_dead_letter
from tests.dashboard.stack import Site, chromium, log_in, running_site, tab

TOPIC, GROUP = "orders", "billing"
TICKED = [("order-100", 17), ("order-900", 22), ("order-7", 5)]
# Twelve more, so that every row of the page is 15 dead letters: ten named, five more.
OTHERS = [(f"order-{n}", 30 + n) for n in range(12)]
SIZES = [(1400, "light"), (1400, "dark"), (1024, "light"), (1024, "dark")]


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(
        redis_url, tmp_path_factory.mktemp("naming-dialogs"), {}, LOCKSTEP_SUBSCRIPTIONS="[]"
    ) as site:
        client = redis.Redis.from_url(redis_url)
        create_topic(client, TOPIC, 1)
        register_group(client, TOPIC, GROUP)
        for key, offset in TICKED + OTHERS:
            add_dead_letter(client, topic=TOPIC, group=GROUP, offset=offset, key=key)
        client.close()
        yield site


@pytest.fixture(scope="module")
def records(site: Site) -> dict[str, int]:
    """key -> record id, once ``dlq list`` synced Redis into the site's database."""
    listed = json.loads(site.manage("dlq", "list", "--group", GROUP, "--json"))
    return {item["key"]: item["id"] for item in listed["items"]}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("naming-dialog-screenshots")
    print(f"screenshots of the dialogs: {folder}")
    return folder


@contextmanager
def _tab(browser: Browser, site: Site, width: int, scheme: str, path: str) -> Iterator[Page]:
    """A tab at ``width`` in ``scheme``, logged in as the demo admin on ``path``; fails
    the test if a page's script raised."""
    page = tab(browser, width, scheme)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, site, path)
    try:
        yield page
    finally:
        page.context.close()
    assert errors == [], "a page's script raised"


def _asked(page: Page, button: str) -> str:
    """Click ``button``; the dialog's sentence once its dry run answered."""
    page.click(button)
    page.wait_for_selector('#action-dialog[data-phase="ready"]')
    return page.text_content("#action-status") or ""


def _cancel(page: Page) -> None:
    page.click("#action-cancel")
    page.wait_for_selector('#action-dialog[data-phase="closed"]', state="attached")


def _fits(page: Page) -> None:
    """The sentence lies within the dialog, which scrolls not sideways."""
    widths = page.evaluate(
        """() => {
          const d = document.getElementById("action-dialog");
          const s = document.getElementById("action-status").getBoundingClientRect();
          const b = d.getBoundingClientRect();
          return {scroll: d.scrollWidth, client: d.clientWidth,
                  inside: s.left >= b.left && s.right <= b.right};
        }"""
    )
    assert widths["scroll"] <= widths["client"] + 1, widths
    assert widths["inside"], widths


@pytest.mark.parametrize(("width", "scheme"), SIZES)
def test_it_names_the_ticked_dead_letters_it_would_discard_and_counts_the_rest(
    browser: Browser,
    site: Site,
    records: dict[str, int],
    shots: Path,
    width: int,
    scheme: str,
) -> None:
    shot = shots / f"discard-{width}-{scheme}.png"
    with _tab(browser, site, width, scheme, f"/groups/{GROUP}/dead-letters") as page:
        for key, _ in TICKED:
            page.check(f'tr.dead-letter-row[data-id="{records[key]}"] input.select-row')

        said = _asked(page, "#discard-selected")
        _fits(page)
        page.screenshot(path=str(shot))
        named = page.eval_on_selector_all(
            "#action-status .target", "(ts) => ts.map((t) => [t.dataset.key, t.dataset.offset])"
        )
        _cancel(page)
        page.check("#select-all")
        every_row = _asked(page, "#discard-selected")
        _cancel(page)

    assert said == "Discard 3 dead letters: order-7 @ 5, order-100 @ 17, order-900 @ 22."
    assert named == [["order-7", "5"], ["order-100", "17"], ["order-900", "22"]]
    assert every_row == (
        "Discard 15 dead letters: order-7 @ 5, order-100 @ 17, order-900 @ 22, order-0 @ 30, "
        "order-1 @ 31, order-2 @ 32, order-3 @ 33, order-4 @ 34, order-5 @ 35, order-6 @ 36"
        " … and 5 more."
    )
    print(f"screenshot: {shot}")


@pytest.mark.parametrize(("width", "scheme"), SIZES)
def test_it_names_what_a_replay_or_a_single_action_would_act_on(
    browser: Browser, site: Site, records: dict[str, int], width: int, scheme: str
) -> None:
    with _tab(browser, site, width, scheme, f"/groups/{GROUP}/dead-letters") as page:
        page.check(f'tr.dead-letter-row[data-id="{records["order-100"]}"] input.select-row')
        replay_one = _asked(page, "#replay-selected")
        _cancel(page)
        replay_all = _asked(page, "#replay-matching")
        _fits(page)
        _cancel(page)
        page.goto(f"{site.url}/groups/{GROUP}/dead-letters/{records['order-900']}")
        replay_single = _asked(page, "#replay-one")
        _cancel(page)
        discard_single = _asked(page, "#discard-one")
        _fits(page)
        _cancel(page)

    assert replay_one == "Replay 1 dead letter: order-100 @ 17."
    assert replay_all.startswith("Replay 15 dead letters: order-7 @ 5, order-100 @ 17, ")
    assert replay_all.endswith(", order-6 @ 36 … and 5 more.")
    assert replay_single == "Replay 1 dead letter: order-900 @ 22."
    assert discard_single == "Discard 1 dead letter: order-900 @ 22."
