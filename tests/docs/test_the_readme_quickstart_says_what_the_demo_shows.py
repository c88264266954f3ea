"""The README's Quickstart tells a new user what ``make run`` shows: every group the demo
consumes with (read from the demo's subscriptions), the poison orders of the key-ordered
group, both logins the demo creates, how to serve it on another port, every process it
starts, what stays between runs and how to start clean, and where the demo's fix is."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lockstep.cli import ROLES
from lockstep.dashboard import settings as dashboard_settings
from lockstep.dashboard.demo.management.commands import bootstrap_demo

README = Path(__file__).resolve().parents[2] / "README.md"


def _quickstart() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Quickstart\n(.*?)^## ", text, re.MULTILINE | re.DOTALL)
    assert match, "README has no Quickstart section"
    return match.group(1)


def _demo_subscriptions() -> list[dict[str, object]]:
    return list(json.loads(dashboard_settings.DEMO_SUBSCRIPTIONS))


def test_it_names_every_group_of_the_demo_with_its_ordering() -> None:
    quickstart = _quickstart()
    for subscription in _demo_subscriptions():
        assert f"group `{subscription['group']}`" in quickstart
        ordering = f"{subscription.get('ordering', 'queue')} ordering"
        section = quickstart.split(f"group `{subscription['group']}`", 1)[1][:120]
        assert ordering in section, (subscription["group"], ordering)


def test_it_explains_the_held_keys_and_poison_orders_of_the_hold_group() -> None:
    quickstart = _quickstart()
    held = [s for s in _demo_subscriptions() if s.get("after_dlq") == "hold"]
    assert held, "the demo has a group that holds keys after a dead letter"
    for subscription in held:
        assert "`after_dlq = hold`" in quickstart
        assert f"{subscription['max_reconsume_times']} retries" in quickstart
    assert "poison" in quickstart and "LOCKSTEP_DEMO_POISON_EVERY" in quickstart
    assert "held" in quickstart and "parked" in quickstart


def test_it_lists_both_logins_the_demo_creates_and_how_to_set_them() -> None:
    quickstart = _quickstart()
    source = Path(bootstrap_demo.__file__).read_text(encoding="utf-8")
    created = re.findall(r'self\._user\("(\w+)", "(\w+)", "(\w+)"', source)
    assert len(created) == 2
    for user_env, password_env, default_name in created:
        assert re.search(rf"^\| {default_name} \|", quickstart, re.MULTILINE), default_name
        assert f"`{user_env}`" in quickstart and f"`{password_env}`" in quickstart


def test_it_says_how_to_serve_the_demo_on_another_port() -> None:
    run = (README.parent / "bin" / "run").read_text(encoding="utf-8")
    assert "${PORT:-8000}" in run
    assert "PORT=" in _quickstart() and "8000" in _quickstart()


# How the Quickstart names each role `make run` starts (lockstep/cli.py's ROLES).
ROLE_IN_README = {
    "web": "the ASGI server",
    "ingester": "the event ingester",
    "alerts": "the alert evaluator",
    "worker": "one Celery worker",
    "analytics": "the analytics worker",
    "beat": "Celery beat",
}


def test_it_names_every_process_make_run_starts_and_the_port_of_its_redis() -> None:
    quickstart = " ".join(_quickstart().split())  # one line: names may wrap
    assert set(ROLE_IN_README) == set(ROLES)
    for role, name in ROLE_IN_README.items():
        assert name in quickstart, role
    run = (README.parent / "bin" / "run").read_text(encoding="utf-8")
    assert "${LOCKSTEP_REDIS_PORT:-6390}" in run
    assert "6390 (`LOCKSTEP_REDIS_PORT`" in quickstart


def test_it_says_what_stays_between_runs_and_the_one_command_to_start_clean() -> None:
    quickstart = " ".join(_quickstart().split())
    makefile = (README.parent / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^reset-demo:", makefile, re.MULTILINE), "the Makefile has the target"
    assert "`var/` is kept between runs" in quickstart
    assert "the demo's users" in quickstart and "run `make reset-demo`" in quickstart


def test_it_says_where_the_button_that_fixes_the_demo_handler_is() -> None:
    quickstart = " ".join(_quickstart().split())
    page = (README.parent / "templates" / "deadletters" / "list.html").read_text(encoding="utf-8")
    assert ">Fix the handler</button>" in page
    assert "**Fix the handler** above group `billing`'s dead-letter list" in quickstart
    assert "(`/groups/billing/dead-letters`" in quickstart
