"""A form of the alert pages that fails is its page again, as a 400: what was typed is
back in the inputs, the error is next to the field it is about (inside the field's
``<label>``), errors about several fields are at the top of the form, and a channel's
secret is never sent back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.test.html import Element, parse_html
from django.utils import timezone

from lockstep.dashboard.alerts.models import Alert, Channel, RuleSetting, Silence
from lockstep.dashboard.alerts.rules import RULES

pytestmark = pytest.mark.django_db

SECRET = "typed-secret-never-echoed"
RULE = next(r for r in RULES.values() if r.params)
PARAM = RULE.params[0]


def _elements(node: Element | str) -> list[Element]:
    """``node`` and every element under it, in document order."""
    if isinstance(node, str):
        return []
    return [node, *(e for child in node.children for e in _elements(child))]


def _text(node: Element | str) -> str:
    return node if isinstance(node, str) else " ".join(_text(c) for c in node.children)


def field(html: str, name: str, form_id: str | None = None) -> tuple[str | None, str]:
    """The ``value`` of the input (or the selected option) named ``name`` and the text of
    the ``<label>`` that holds it (in the form ``form_id``, else the only such input)."""
    root = parse_html(html)
    if form_id is not None:
        (root,) = [e for e in _elements(root) if dict(e.attributes).get("id") == form_id]
    labels = [
        label
        for label in _elements(root)
        if label.name == "label"
        and any(dict(e.attributes).get("name") == name for e in _elements(label))
    ]
    assert len(labels) == 1, f"{len(labels)} labels hold {name!r}"
    (control,) = [e for e in _elements(labels[0]) if dict(e.attributes).get("name") == name]
    if control.name == "select":
        chosen = [e for e in _elements(control) if "selected" in dict(e.attributes)]
        return (dict(chosen[0].attributes).get("value") if chosen else None), _text(labels[0])
    return dict(control.attributes).get("value"), _text(labels[0])


def form_errors(html: str, form_id: str) -> str:
    """The text of the errors at the top of the form ``form_id``."""
    (form,) = [e for e in _elements(parse_html(html)) if dict(e.attributes).get("id") == form_id]
    tops = [e for e in form.children if not isinstance(e, str) and e.name == "p"]
    return " ".join(_text(p) for p in tops if "form-error" in str(dict(p.attributes).get("class")))


def test_a_new_channel_with_a_bad_target_keeps_what_was_typed_but_the_secret(
    client: Client, admin_user: User
) -> None:
    client.force_login(admin_user)
    typed = {"name": "ops hook", "kind": "webhook", "target": "ftp://files.test/x"}

    response = client.post("/alerts/channels/new", {**typed, "secret": SECRET, "format": "json"})

    assert response.status_code == 400
    html = response.content.decode()
    value, label = field(html, "target")
    assert value == "ftp://files.test/x"
    assert "must start with http:// or https://" in label
    assert field(html, "name")[0] == "ops hook"
    assert field(html, "kind")[0] == "webhook"
    assert field(html, "format")[0] == "json"
    assert SECRET not in html
    assert not Channel.objects.exists()


def test_a_new_channel_of_an_unknown_kind_says_so_next_to_the_kind(
    client: Client, admin_user: User
) -> None:
    client.force_login(admin_user)

    response = client.post(
        "/alerts/channels/new", {"name": "x", "kind": "pigeon", "target": "a@b.test"}
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "kind must be one of" in field(html, "kind")[1]
    assert field(html, "target")[0] == "a@b.test"


def test_editing_a_channel_into_a_bad_format_keeps_the_edit_and_hides_both_secrets(
    client: Client, admin_user: User
) -> None:
    stored = "stored-secret-value"
    channel = Channel.objects.create(
        name="ops", kind="webhook", target="https://hooks.test/a", secret=stored
    )
    client.force_login(admin_user)

    response = client.post(
        f"/alerts/channels/{channel.pk}/save",
        {
            "name": "ops-renamed",
            "kind": "webhook",
            "target": "https://hooks.test/b",
            "format": "yaml",
            "secret": SECRET,
            "enabled": "1",
        },
    )

    assert response.status_code == 400
    html = response.content.decode()
    value, label = field(html, "format")
    assert value == "yaml" and "the webhook format must be one of" in label
    assert field(html, "name")[0] == "ops-renamed"
    assert field(html, "target")[0] == "https://hooks.test/b"
    assert SECRET not in html and stored not in html
    channel.refresh_from_db()
    assert (channel.name, channel.secret) == ("ops", stored)


def test_a_silence_with_a_bad_end_time_keeps_what_was_typed(client: Client, operator: User) -> None:
    client.force_login(operator)
    typed = {"topic": "orders", "group": "billing", "rule": RULE.name, "reason": "deploy"}

    response = client.post("/alerts/silences/new", {**typed, "ends_at": "next tuesday"})

    assert response.status_code == 400
    html = response.content.decode()
    value, label = field(html, "ends_at", "silence-form")
    assert value == "next tuesday"
    assert "is not a date and time (YYYY-MM-DD HH:MM)" in label
    for name, typed_value in typed.items():
        assert field(html, name, "silence-form")[0] == typed_value, name
    assert not Silence.objects.exists()


def test_a_silence_of_nothing_says_why_at_the_top_of_the_form(
    client: Client, operator: User
) -> None:
    client.force_login(operator)

    response = client.post("/alerts/silences/new", {"minutes": "10", "reason": "quiet"})

    assert response.status_code == 400
    html = response.content.decode()
    assert "a silence of everything needs the" in form_errors(html, "silence-form")
    assert field(html, "minutes", "silence-form")[0] == "10"
    assert field(html, "reason", "silence-form")[0] == "quiet"


def test_an_override_with_a_bad_threshold_is_shown_open_with_the_error_by_it(
    client: Client, operator: User
) -> None:
    client.force_login(operator)

    response = client.post(
        "/alerts/rules/save",
        {"rule": RULE.name, "topic": "orders", "group": "billing", f"param_{PARAM.name}": "-5"},
    )

    assert response.status_code == 400
    html = response.content.decode()
    form_id = f"rule-{RULE.name}"
    value, label = field(html, f"param_{PARAM.name}", form_id)
    assert value == "-5" and "must be at least" in label
    assert field(html, "topic", form_id)[0] == "orders"
    assert field(html, "group", form_id)[0] == "billing"
    (section,) = [e for e in _elements(parse_html(html)) if dict(e.attributes).get("id") == form_id]
    assert any(e.name == "details" and "open" in dict(e.attributes) for e in _elements(section))
    assert not RuleSetting.objects.exists()


def test_an_acknowledgement_with_a_snooze_in_the_past_keeps_the_note(
    client: Client, operator: User
) -> None:
    alert = Alert.objects.create(
        rule="queue_stuck", fingerprint="fp", summary="orders q1 is stuck", since=timezone.now()
    )
    client.force_login(operator)
    past = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%d %H:%M")

    response = client.post(
        f"/alerts/{alert.pk}/acknowledge", {"note": "on it", "snooze_until": past}
    )

    assert response.status_code == 400
    html = response.content.decode()
    value, label = field(html, "snooze_until", "acknowledge-form")
    assert value == past and "the snooze must end in the future" in label
    assert field(html, "note", "acknowledge-form")[0] == "on it"
    alert.refresh_from_db()
    assert alert.state == "open"
