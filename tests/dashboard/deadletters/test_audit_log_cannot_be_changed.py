"""The audit log is append-only: the model refuses updates and deletes, and the Django
admin shows it (and the event log) without add, change or delete."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.deadletters.models import AuditEntry, AuditLogIsAppendOnly
from lockstep.dashboard.web.store.models import Event

pytestmark = pytest.mark.django_db


def _entry() -> AuditEntry:
    return AuditEntry.objects.create(
        actor="operator",
        action="replay",
        request_id="req-1",
        group="billing",
        filter={"key": "order-1"},
        count=2,
        outcomes={"in_place": 1, "missing": 1},
    )


def test_it_refuses_to_change_a_stored_entry() -> None:
    entry = _entry()
    entry.count = 99

    with pytest.raises(AuditLogIsAppendOnly):
        entry.save()
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(count=99)

    assert AuditEntry.objects.get().count == 2


def test_it_refuses_to_delete_an_entry() -> None:
    entry = _entry()

    with pytest.raises(AuditLogIsAppendOnly):
        entry.delete()
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEntry.objects.all().delete()

    assert AuditEntry.objects.count() == 1


def test_the_admin_shows_the_audit_log_read_only_even_to_a_superuser(
    client: Client, django_user_model: type[User]
) -> None:
    entry = _entry()
    root = django_user_model.objects.create_superuser("root", password="pw-123456789")
    client.force_login(root)
    base = "/admin/deadletters/auditentry"

    listing = client.get(f"{base}/")
    page = client.get(f"{base}/{entry.pk}/change/")
    changed = client.post(f"{base}/{entry.pk}/change/", {"actor": "someone else", "count": 0})
    deleted = client.post(f"{base}/{entry.pk}/delete/", {"post": "yes"})
    added = client.get(f"{base}/add/")

    assert listing.status_code == 200
    assert page.status_code == 200
    assert b'name="actor"' not in page.content  # shown, not a form field
    assert (changed.status_code, deleted.status_code, added.status_code) == (403, 403, 403)
    assert AuditEntry.objects.get().actor == "operator"


def test_the_admin_shows_events_read_only_too(
    client: Client, django_user_model: type[User]
) -> None:
    event = Event.objects.create(stream_id="1-0", type="dead_lettered", ts="2026-11-21T10:30Z")
    root = django_user_model.objects.create_superuser("root", password="pw-123456789")
    client.force_login(root)
    base = "/admin/monitor/event"

    changed = client.post(f"{base}/{event.pk}/change/", {"type": "lock_lost"})
    deleted = client.post(f"{base}/{event.pk}/delete/", {"post": "yes"})

    assert client.get(f"{base}/{event.pk}/change/").status_code == 200
    assert (changed.status_code, deleted.status_code) == (403, 403)
    assert Event.objects.get().type == "dead_lettered"


def test_an_admin_role_may_read_the_audit_log_in_the_admin(
    client: Client, admin_user: User
) -> None:
    _entry()
    client.force_login(admin_user)

    assert client.get("/admin/deadletters/auditentry/").status_code == 200
