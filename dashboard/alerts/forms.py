"""The alert pages' forms: each declares its fields and says what is wrong per field, so
that a failed post re-renders its page with the typed values and the errors next to
them (``web.invalid``). Messages name the field as the old error page did.

Secrets (a channel's webhook secret or SMTP password) are never rendered back: the
secret input has no value, on the first render as on an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.utils import timezone

from lockstep.dashboard.alerts.channels import KINDS
from lockstep.dashboard.alerts.models import Channel, Silence
from lockstep.dashboard.alerts.rules import RULES, Rule
from lockstep.dashboard.web.time_zone import parse_local

# At most a year: longer is a typo, and a silence that long should be a rule change.
MAX_MINUTES = 60 * 24 * 366
TRUE_WORDS = ("1", "on", "true", "yes")


class FlagInput(forms.CheckboxInput):
    """A box read as ticked for ``1``/``on``/``true``/``yes`` only (``0`` is unticked,
    which Django's own ``CheckboxInput`` reads as ticked)."""

    def value_from_datadict(self, data: Any, files: Any, name: str) -> bool:
        return str(data.get(name) or "").strip().lower() in TRUE_WORDS


def flag_field() -> forms.BooleanField:
    return forms.BooleanField(required=False, widget=FlagInput)


def text_field(label: str, max_length: int = 255, required: bool = False) -> forms.CharField:
    """A stripped text field whose errors name it (``label``) as the error page did."""
    return forms.CharField(
        label=label,
        max_length=max_length,
        required=required,
        error_messages={"max_length": f"{label} is longer than {max_length} characters"},
    )


def choice_field(label: str, allowed: Iterable[str], required: bool = False) -> forms.ChoiceField:
    names = sorted(allowed)
    return forms.ChoiceField(
        label=label,
        choices=[("", ""), *((n, n) for n in names)],
        required=required,
        error_messages={
            "invalid_choice": f"{label} must be one of: {', '.join(names)}; got %(value)r"
        },
    )


class ParsedTextField(forms.Field):
    """A stripped text field parsed by ``parse`` (``None`` when blank): a ``CharField``
    would run its length check on the parsed value."""

    max_length = 40

    def __init__(self, label: str) -> None:
        super().__init__(label=label, required=False)

    def to_python(self, value: Any) -> Any:
        raw = str(value or "").strip()
        if not raw:
            return None
        if len(raw) > self.max_length:
            raise forms.ValidationError(f"{self.label} is longer than {self.max_length} characters")
        if "\x00" in raw:
            raise forms.ValidationError(f"{self.label} contains a NUL character")
        return self.parse(raw)

    def parse(self, raw: str) -> Any:
        raise NotImplementedError


class ZonedTimeField(ParsedTextField):
    """``YYYY-MM-DD HH:MM`` read in the viewer's zone (``time_zone.parse_local``, the
    parser every time input of the dashboard shares)."""

    def parse(self, raw: str) -> datetime:
        parsed = parse_local(raw)
        if parsed is None:
            raise forms.ValidationError(
                f"{self.label}: {raw!r} is not a date and time (YYYY-MM-DD HH:MM)"
            )
        return parsed


class MinutesField(ParsedTextField):
    """A number of minutes, more than 0 and at most a year."""

    max_length = 20

    def parse(self, raw: str) -> timedelta:
        try:
            number = float(raw)
        except ValueError:
            raise forms.ValidationError(
                f"{self.label}: {raw!r} is not a number of minutes"
            ) from None
        if not (0 < number <= MAX_MINUTES):  # also refuses nan
            raise forms.ValidationError(f"{self.label}: must be more than 0 and at most a year")
        return timedelta(minutes=number)


# ---- channels ----------------------------------------------------------------------------


# A channel's fields a form shows and writes as they are (the secret is handled apart).
SHOWN_FIELDS = ("name", "kind", "target", "format", "enabled", "send_resolved", "topic", "group")


class ChannelForm(forms.Form):
    """A channel's fields, checked by its kind. A blank secret keeps the stored one
    (``clear_secret`` removes it); ``apply`` writes the cleaned fields to a channel."""

    name = text_field("name", max_length=100)
    kind = choice_field("kind", KINDS)
    target = text_field("target", max_length=4000)
    secret = forms.CharField(max_length=255, required=False, widget=forms.PasswordInput)
    clear_secret = flag_field()
    format = text_field("format", max_length=32)
    enabled = flag_field()
    send_resolved = flag_field()
    topic = text_field("topic")
    group = text_field("group")

    def __init__(
        self, data: Mapping[str, Any] | None = None, channel: Channel | None = None
    ) -> None:
        initial = {"enabled": True, "send_resolved": True}
        if channel is not None:
            initial = {f: getattr(channel, f) for f in SHOWN_FIELDS}
        super().__init__(data, initial=initial)
        self.channel = channel

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if not name:
            raise forms.ValidationError("give the channel a name")
        taken = Channel.objects.filter(name=name)
        if self.channel is not None and self.channel.pk is not None:
            taken = taken.exclude(pk=self.channel.pk)
        if taken.exists():
            raise forms.ValidationError(f"there is already a channel named {name!r}")
        return name

    def clean_kind(self) -> str:
        kind: str = self.cleaned_data["kind"]
        if not kind:
            raise forms.ValidationError(f"choose a kind ({', '.join(KINDS)})")
        return kind

    def kept_secret(self) -> str:
        """The secret the channel will have: the typed one, else the stored one."""
        typed: str = self.cleaned_data.get("secret") or ""
        if typed or self.cleaned_data.get("clear_secret"):
            return typed
        return self.channel.secret if self.channel is not None else ""

    def clean(self) -> dict[str, Any]:
        """The kind's own check: of the target first, then of the format with it, so
        each message lands next to the field it is about."""
        data = super().clean() or {}
        kind = KINDS.get(data.get("kind") or "")
        if kind is None or self.has_error("target") or self.has_error("format"):
            return data
        target, secret = data.get("target") or "", self.kept_secret()
        try:
            kind.validate(target, secret, "")
        except ValueError as exc:
            self.add_error("target", str(exc))
            return data
        try:
            kind.validate(target, secret, data.get("format") or "")
        except ValueError as exc:
            self.add_error("format", str(exc))
        return data

    def apply(self, channel: Channel) -> Channel:
        """``channel`` with the cleaned fields (call after ``is_valid``)."""
        data = self.cleaned_data
        channel.secret = self.kept_secret()
        for name in SHOWN_FIELDS:
            setattr(channel, name, data[name])
        return channel


# ---- silences ----------------------------------------------------------------------------


class SilenceForm(forms.Form):
    """A silence of a topic, group and/or rule (all blank only with ``everything``), for
    ``minutes`` or until ``ends_at`` (one of the two), ending in the future."""

    topic = text_field("topic")
    group = text_field("group")
    rule = choice_field("rule", RULES)
    minutes = MinutesField("duration")
    ends_at = ZonedTimeField("ends at")
    reason = text_field("reason", max_length=2000)
    everything = flag_field()

    def clean_ends_at(self) -> datetime | None:
        ends_at: datetime | None = self.cleaned_data["ends_at"]
        if ends_at is not None and ends_at <= timezone.now():
            raise forms.ValidationError("the silence must end in the future")
        return ends_at

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        scoped = any(data.get(f) for f in ("topic", "group", "rule", "everything"))
        if not scoped and not any(self.has_error(f) for f in ("topic", "group", "rule")):
            self.add_error(
                None,
                "give a topic, a group or a rule to silence; a silence of everything "
                "needs the 'silence everything' box ticked",
            )
        timed = self.has_error("minutes") or self.has_error("ends_at")
        if not timed and (data.get("minutes") is None) == (data.get("ends_at") is None):
            self.add_error(None, "give either a duration in minutes or an end time, not both")
        return data

    def silence(self, actor: str, now: datetime) -> Silence:
        """The silence described (call after ``is_valid``)."""
        data = self.cleaned_data
        length: timedelta | None = data["minutes"]
        return Silence(
            topic=data["topic"],
            group=data["group"],
            rule=data["rule"],
            reason=data["reason"],
            created_by=actor,
            starts_at=now,
            created_at=now,
            ends_at=now + length if length is not None else data["ends_at"],
        )


# ---- rule overrides ----------------------------------------------------------------------


class OverrideForm(forms.Form):
    """An override of ``rule`` for a topic and/or group: one ``param_<name>`` field per
    parameter, blank (inherited) or a value its ``Param.parse`` accepts."""

    topic = text_field("topic")
    group = text_field("group")
    enabled = flag_field()

    def __init__(self, rule: Rule, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(data, initial={"enabled": True})
        self.rule = rule
        for p in rule.params:
            self.fields[f"param_{p.name}"] = text_field(p.label, max_length=40)

    def params(self) -> list[tuple[Any, float, forms.BoundField]]:
        """(param, its default, its bound field) per parameter, for the template."""
        return [(p, p.default(), self[f"param_{p.name}"]) for p in self.rule.params]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for p in self.rule.params:
            raw = data.get(f"param_{p.name}")
            if not raw:
                continue
            try:
                p.parse(raw)
            except ValueError as exc:
                self.add_error(f"param_{p.name}", str(exc))
        return data

    def values(self) -> dict[str, float]:
        """The given parameters as numbers (call after ``is_valid``)."""
        given = ((p, self.cleaned_data.get(f"param_{p.name}")) for p in self.rule.params)
        return {p.name: p.parse(raw) for p, raw in given if raw}


# ---- acknowledging -----------------------------------------------------------------------


class AcknowledgeForm(forms.Form):
    """A note and an optional snooze, in the future."""

    note = text_field("note", max_length=2000)
    snooze_until = ZonedTimeField("snooze until")

    def clean_snooze_until(self) -> datetime | None:
        until: datetime | None = self.cleaned_data["snooze_until"]
        if until is not None and until <= timezone.now():
            raise forms.ValidationError("the snooze must end in the future")
        return until
