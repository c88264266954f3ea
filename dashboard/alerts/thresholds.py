"""Each rule's parameters for a (topic, group): the settings' defaults, overridden by
``RuleSetting`` rows (most specific first: topic and group, group, topic, neither)."""

from __future__ import annotations

from collections.abc import Iterable

from lockstep.dashboard.alerts.models import RuleSetting
from lockstep.dashboard.alerts.rules import RULES


class Thresholds:
    """A snapshot of the overrides, read once per evaluation tick; call it as a
    ``ParamsFor``: ``thresholds(rule, topic, group)`` -> parameters, or ``None`` when the
    rule is switched off there."""

    def __init__(self, rows: Iterable[RuleSetting]) -> None:
        self._rows = {(r.rule, r.topic, r.group): r for r in rows}
        self._cache: dict[tuple[str, str, str], dict[str, float] | None] = {}

    @classmethod
    def load(cls) -> Thresholds:
        return cls(RuleSetting.objects.all())

    def __call__(self, rule: str, topic: str, group: str) -> dict[str, float] | None:
        where = (rule, topic, group)
        if where not in self._cache:
            self._cache[where] = self._resolve(rule, topic, group)
        return self._cache[where]

    def _resolve(self, rule: str, topic: str, group: str) -> dict[str, float] | None:
        known = RULES[rule]
        values = known.defaults()
        names = {p.name: p for p in known.params}
        enabled = True
        # Least specific first: the more specific rows overwrite (on/off included).
        for scope in ((rule, "", ""), (rule, topic, ""), (rule, "", group), (rule, topic, group)):
            row = self._rows.get(scope)
            if row is None:
                continue
            enabled = row.enabled
            for name, raw in (row.params or {}).items():
                if name not in names:
                    continue
                try:
                    values[name] = names[name].parse(raw)
                except ValueError:
                    continue  # forms validate; a bad hand-edited value keeps the default
        return values if enabled else None
