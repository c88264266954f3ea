"""What a rule is: a named check over one reading of the live state (``LiveState``) that
returns a ``Finding`` per subject whose condition holds *and* has held for the rule's
threshold. The lifecycle (``dashboard.alerts.lifecycle``) opens one alert per firing
subject and resolves an alert when its subject no longer fires.

A rule's parameters (``Param``) have defaults from the settings and may be overridden per
topic and group (``RuleSetting``); ``Params`` answers for one (topic, group).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LiveState
    from lockstep.dashboard.alerts.models import Alert

WARNING, CRITICAL = "warning", "critical"


@dataclass(frozen=True)
class Param:
    """One threshold of a rule: ``setting`` names its default in the Django settings."""

    name: str
    label: str
    setting: str
    minimum: float = 0.0
    integer: bool = False

    def default(self) -> float:
        return float(getattr(settings, self.setting))

    def parse(self, raw: Any) -> float:
        """The value of ``raw`` (from a form or the admin); ``ValueError`` with a message a
        person can act on when it is not a number at or above the minimum."""
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{self.label}: {raw!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{self.label}: {raw!r} is not a finite number")
        if value < self.minimum:
            raise ValueError(f"{self.label}: must be at least {self.minimum:g}")
        if self.integer and value != int(value):
            raise ValueError(f"{self.label}: must be a whole number")
        return value


@dataclass(frozen=True)
class Finding:
    """A subject for which a rule fires now. ``since_ms`` is when its condition began (so
    an alert records how long it had held before it was raised); ``summary`` is the one
    sentence a notification leads with."""

    rule: str
    severity: str
    summary: str
    since_ms: int
    topic: str = ""
    group: str = ""
    queue: int | None = None
    key: str = ""
    consumer: str = ""
    offset: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """The subject: one unresolved alert per fingerprint."""
        queue = "" if self.queue is None else str(self.queue)
        return "|".join((self.rule, self.topic, self.group, queue, self.key, self.consumer))


@dataclass(frozen=True)
class Resolution:
    """A resolved alert's final state: ``state`` completes the sentence "…, resolved
    after 2 min 38 s: <state>"; ``details`` replace the details last seen while open
    (e.g. ``hold_state``)."""

    state: str
    details: Mapping[str, Any] = field(default_factory=dict)


# (rule, topic, group) -> {param: value} with overrides applied; None when disabled.
ParamsFor = Callable[[str, str, str], "dict[str, float] | None"]


class Rule(ABC):
    """A rule: ``name`` (as stored on alerts), a one-line ``description``, its ``params``
    and ``evaluate``. Rules keep no state between ticks except what ``LiveState.tracker``
    holds for them (when a condition was first seen)."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()

    @abstractmethod
    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        """Every subject that fires now."""

    def resolution(self, alert: Alert, live: LiveState) -> Resolution:
        """What is true now that ``alert``'s subject no longer fires (its final state),
        for the resolved alert's summary and details. The default knows only that the
        condition cleared; a rule that can tell more (how a held key was released)
        overrides it."""
        return Resolution("the condition cleared")

    def defaults(self) -> dict[str, float]:
        return {p.name: p.default() for p in self.params}
