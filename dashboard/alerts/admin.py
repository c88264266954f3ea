"""The alerts in the Django admin: alerts read-mostly (the lifecycle owns them), silences,
rule overrides (their parameters checked by the rule's ``Param.parse``) and channels
(the secret is entered like a password and never listed)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from lockstep.dashboard.alerts.channels import KINDS
from lockstep.dashboard.alerts.models import (
    Alert,
    AlertEvent,
    Channel,
    Delivery,
    RuleSetting,
    Silence,
)
from lockstep.dashboard.alerts.rules import RULES


class AlertEventInline(admin.TabularInline):
    model = AlertEvent
    extra = 0
    can_delete = False
    readonly_fields = ("at", "kind", "actor", "note", "details")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    can_delete = False
    fields = ("channel", "event", "status", "attempts", "last_error", "delivered_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    """Read-mostly: only the acknowledgement note may be edited here; the pages
    acknowledge (with the timeline entry) and the evaluator opens and resolves."""

    list_display = ("id", "rule", "severity", "state", "topic", "group", "queue", "opened_at")
    list_filter = ("state", "severity", "rule")
    search_fields = ("summary", "topic", "group", "key", "fingerprint")
    inlines = (AlertEventInline, DeliveryInline)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in Alert._meta.fields if f.name != "ack_note"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    list_display = ("id", "topic", "group", "rule", "starts_at", "ends_at", "created_by")
    list_filter = ("rule",)
    search_fields = ("topic", "group", "reason", "created_by")


class RuleSettingForm(forms.ModelForm):
    rule = forms.ChoiceField(choices=[(name, name) for name in sorted(RULES)])

    class Meta:
        model = RuleSetting
        fields = ("rule", "topic", "group", "enabled", "params", "updated_by")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        rule = RULES.get(data.get("rule") or "")
        params = data.get("params")
        if rule is None or params is None:
            return data
        if not isinstance(params, dict):
            raise forms.ValidationError({"params": 'give an object: {"name": number}'})
        known = {p.name: p for p in rule.params}
        cleaned, problems = {}, []
        for name, raw in params.items():
            if name not in known:
                problems.append(f"{name!r} is not a parameter of {rule.name} ({', '.join(known)})")
                continue
            try:
                cleaned[name] = known[name].parse(raw)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise forms.ValidationError({"params": problems})
        data["params"] = cleaned
        return data


@admin.register(RuleSetting)
class RuleSettingAdmin(admin.ModelAdmin):
    form = RuleSettingForm
    list_display = ("rule", "topic", "group", "enabled", "params", "updated_by", "updated_at")
    list_filter = ("rule", "enabled")


class ChannelForm(forms.ModelForm):
    kind = forms.ChoiceField(choices=[(name, kind.label) for name, kind in KINDS.items()])
    secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Blank keeps the stored secret.",
    )

    class Meta:
        model = Channel
        fields = (
            "name",
            "kind",
            "target",
            "secret",
            "format",
            "enabled",
            "send_resolved",
            "topic",
            "group",
        )

    def clean_secret(self) -> str:
        given = str(self.cleaned_data.get("secret") or "")
        return given or (self.instance.secret if self.instance.pk else "")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind = KINDS.get(data.get("kind") or "")
        if kind is not None:
            try:
                kind.validate(
                    data.get("target") or "", data.get("secret") or "", data.get("format") or ""
                )
            except ValueError as exc:
                raise forms.ValidationError(str(exc)) from None
        return data


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    list_display = ("name", "kind", "enabled", "send_resolved", "topic", "group", "from_env")
    list_filter = ("kind", "enabled", "from_env")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is not None and obj.from_env:  # mirrored from the environment at start-up
            return ("name", "kind", "target", "format", "from_env")
        return ("from_env",)
