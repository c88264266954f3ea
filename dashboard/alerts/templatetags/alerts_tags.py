"""``{% open_alerts %}``: the nav badge's first value (``badge.js`` keeps it current)."""

from __future__ import annotations

from django import template
from django.db import DatabaseError

from lockstep.dashboard.alerts.models import OPEN, Alert

register = template.Library()


@register.simple_tag
def open_alerts() -> int:
    """How many alerts are ``open`` (not acknowledged, not resolved). 0 when the database
    cannot say: the badge must never break a page; the socket corrects it."""
    try:
        return Alert.objects.filter(state=OPEN).count()
    except DatabaseError:
        return 0
