"""The rules page: every rule with its description and default thresholds (from the
settings), the overrides per topic and/or group (``RuleSetting``) with the values they
take effect with, and the operators' add, edit and delete of an override.

A blank parameter in the form is not overridden (it comes from a less specific row or
the settings); a given one must pass the rule's ``Param.parse`` and is stored as a
number.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone

from lockstep.dashboard.alerts.fields import choice, row_id
from lockstep.dashboard.alerts.forms import OverrideForm
from lockstep.dashboard.alerts.models import RuleSetting
from lockstep.dashboard.alerts.permissions import CHANGE_RULES, VIEW_RULES
from lockstep.dashboard.alerts.rules import RULES, Rule
from lockstep.dashboard.alerts.thresholds import Thresholds
from lockstep.dashboard.web.pages import form_action, invalid, page, require
from lockstep.dashboard.web.roles import has_perm
from lockstep.dashboard.web.views import BadParameter, NotFound

DELETE_RULES = "alerts.delete_rulesetting"


def override_row(setting: RuleSetting, rule: Rule, thresholds: Thresholds) -> dict[str, Any]:
    """One override: its own values (``None`` where it inherits) next to the values that
    take effect for its topic and group."""
    effective = thresholds(setting.rule, setting.topic, setting.group)
    own = setting.params or {}
    return {
        "setting": setting,
        "params": [
            {
                "param": p,
                "own": own.get(p.name),
                "effective": effective.get(p.name) if effective is not None else None,
            }
            for p in rule.params
        ],
    }


@page("alerts/rules.html", VIEW_RULES)
def rules_page(request: HttpRequest) -> dict[str, Any]:
    thresholds = Thresholds.load()
    settings_by_rule: dict[str, list[RuleSetting]] = {}
    for setting in RuleSetting.objects.all():
        settings_by_rule.setdefault(setting.rule, []).append(setting)
    return {
        "rules": [
            {
                "rule": rule,
                "defaults": [(p, p.default()) for p in rule.params],
                "overrides": [
                    override_row(s, rule, thresholds) for s in settings_by_rule.get(name, [])
                ],
                "form": OverrideForm(rule),
            }
            for name, rule in sorted(RULES.items())
        ],
        "unknown": [
            s for name, rows in settings_by_rule.items() if name not in RULES for s in rows
        ],
        "may_change": has_perm(request.user, CHANGE_RULES),
        "may_delete": has_perm(request.user, DELETE_RULES),
    }


@form_action
def save_rule_setting_view(request: HttpRequest) -> HttpResponse:
    """Creates or replaces the override of (rule, topic, group). The rule comes from the
    page's hidden field: an unknown one is the error page (no form on the page has it)."""
    require(request, CHANGE_RULES, "change rule thresholds")
    name = choice(request.POST, "rule", RULES)
    if not name:
        raise BadParameter("choose a rule")
    form = OverrideForm(RULES[name], request.POST)
    if not form.is_valid():
        return invalid(request, rules_page, {"form": form})
    with transaction.atomic():
        setting, created = RuleSetting.objects.update_or_create(
            rule=name,
            topic=form.cleaned_data["topic"],
            group=form.cleaned_data["group"],
            defaults={
                "enabled": form.cleaned_data["enabled"],
                "params": form.values(),
                "updated_by": request.user.get_username(),
                "updated_at": timezone.now(),
            },
        )
    messages.success(request, f"{'Added' if created else 'Saved'} the override {setting}.")
    return redirect("alert-rules")


@form_action
def delete_rule_setting_view(request: HttpRequest, setting_id: str) -> HttpResponse:
    require(request, DELETE_RULES, "delete rule overrides")
    setting = RuleSetting.objects.filter(pk=row_id(setting_id, "override")).first()
    if setting is None:
        raise NotFound(f"no override #{setting_id}")
    setting.delete()
    messages.success(request, f"Deleted the override {setting}.")
    return redirect("alert-rules")
