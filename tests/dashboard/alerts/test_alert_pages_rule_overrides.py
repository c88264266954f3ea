"""Rule thresholds: the page shows every rule with its defaults; operators add, replace
and delete an override per topic and/or group, each value checked by the rule's
``Param.parse``; the page shows the values that take effect. Viewers may not change
them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.alerts.models import RuleSetting
from lockstep.dashboard.alerts.rules import RULES

pytestmark = pytest.mark.django_db

RULE = next(r for r in RULES.values() if r.params)
PARAM = RULE.params[0]


def test_it_lists_every_rule_with_its_description_and_defaults(
    client: Client, viewer: User
) -> None:
    client.force_login(viewer)

    response = client.get("/alerts/rules")

    page = response.content.decode()
    assert [r["rule"].name for r in response.context["data"]["rules"]] == sorted(RULES)
    for rule in RULES.values():
        for p in rule.params:
            assert p.label in page
    assert 'class="stacked-form override-form"' not in page  # a viewer changes nothing


def test_an_operator_adds_an_override_for_a_group_and_sees_it_take_effect(
    client: Client, operator: User
) -> None:
    client.force_login(operator)
    value = PARAM.default() + 7

    response = client.post(
        "/alerts/rules/save",
        {"rule": RULE.name, "group": "billing", "enabled": "1", f"param_{PARAM.name}": str(value)},
    )

    assert response.status_code == 302
    setting = RuleSetting.objects.get()
    assert (setting.rule, setting.topic, setting.group, setting.enabled) == (
        RULE.name,
        "",
        "billing",
        True,
    )
    assert setting.params == {PARAM.name: value}
    assert setting.updated_by == "operator"
    (rule_row,) = [
        r for r in client.get("/alerts/rules").context["data"]["rules"] if r["rule"] is RULE
    ]
    (override,) = rule_row["overrides"]
    assert override["params"][0]["effective"] == value


def test_saving_the_same_scope_again_replaces_it_and_delete_removes_it(
    client: Client, operator: User
) -> None:
    client.force_login(operator)
    form = {"rule": RULE.name, "topic": "orders", f"param_{PARAM.name}": "12"}
    client.post("/alerts/rules/save", {**form, "enabled": "1"})

    client.post("/alerts/rules/save", form)  # enabled unticked: switched off there

    setting = RuleSetting.objects.get()
    assert setting.enabled is False
    (rule_row,) = [
        r for r in client.get("/alerts/rules").context["data"]["rules"] if r["rule"] is RULE
    ]
    assert rule_row["overrides"][0]["params"][0]["effective"] is None  # off
    assert client.post(f"/alerts/rules/{setting.pk}/delete").status_code == 302
    assert not RuleSetting.objects.exists()


@pytest.mark.parametrize(
    ("raw", "message"),
    [("-5", "must be at least"), ("lots", "is not a number"), ("nan", "not a finite number")],
)
def test_it_refuses_a_threshold_that_is_not_a_usable_number(
    client: Client, operator: User, raw: str, message: str
) -> None:
    client.force_login(operator)

    response = client.post(
        "/alerts/rules/save", {"rule": RULE.name, "enabled": "1", f"param_{PARAM.name}": raw}
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert message in page and PARAM.label in page
    assert not RuleSetting.objects.exists()


def test_a_viewer_may_not_change_thresholds(client: Client, viewer: User) -> None:
    setting = RuleSetting.objects.create(rule=RULE.name, topic="orders")
    client.force_login(viewer)

    save = client.post("/alerts/rules/save", {"rule": RULE.name, f"param_{PARAM.name}": "3"})
    delete = client.post(f"/alerts/rules/{setting.pk}/delete")

    assert (save.status_code, delete.status_code) == (403, 403)
    assert RuleSetting.objects.get().params == {}
