"""``web.panels``: a feature app shows a panel on a group's dead-letter list through the
registry its ``AppConfig.ready()`` fills, not by being imported by the page's app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import Client

from lockstep.dashboard.web.panels import GROUP_PANELS, GroupPanel, group_panels
from tests.dashboard.deadletters.helpers import make_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def probe_panel() -> Iterator[GroupPanel]:
    def panel(group: str) -> dict[str, Any] | None:
        return {"group": group} if group == "probe-group" else None

    GROUP_PANELS.add("probe", panel)
    yield panel
    GROUP_PANELS.remove("probe")


def test_a_registered_panel_answers_for_its_group_and_is_left_out_elsewhere(
    probe_panel: GroupPanel,
) -> None:
    assert group_panels("probe-group")["probe"] == {"group": "probe-group"}
    assert "probe" not in group_panels("orders-group")


def test_a_second_panel_under_a_taken_name_is_refused(probe_panel: GroupPanel) -> None:
    GROUP_PANELS.add("probe", probe_panel)  # ready() running again is fine

    with pytest.raises(ValueError, match="group panel named 'probe' is registered already"):
        GROUP_PANELS.add("probe", lambda group: None)


def test_the_demo_app_registers_its_billing_switch_when_django_starts() -> None:
    assert "demo" in GROUP_PANELS


def test_the_list_page_hands_the_panels_to_its_template(
    probe_panel: GroupPanel, admin_client: Client, redis_client: redis.Redis
) -> None:
    make_group(redis_client, group="probe-group")

    response = admin_client.get("/groups/probe-group/dead-letters")

    assert response.status_code == 200
    assert response.context["data"]["panels"]["probe"] == {"group": "probe-group"}
