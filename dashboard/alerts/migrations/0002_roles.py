"""The alert permissions of the roles made by ``deadletters.0002_roles`` (docs/dead-letters.md
§4, "Roles"): viewers see alerts, silences, rules and channels; operators also acknowledge
and snooze alerts, manage silences and change rule thresholds; admins also manage
notification channels."""

from typing import Any

from django.db import migrations

PERMISSIONS: dict[str, dict[str, str]] = {
    "alert": {
        "view_alert": "Can view alert",
        "acknowledge_alert": "Can acknowledge and snooze alerts",
    },
    "alertevent": {"view_alertevent": "Can view alert event"},
    "delivery": {"view_delivery": "Can view delivery"},
    "silence": {
        "view_silence": "Can view silence",
        "manage_silence": "Can create and end silences",
    },
    "rulesetting": {
        "view_rulesetting": "Can view rule setting",
        "add_rulesetting": "Can add rule setting",
        "change_rulesetting": "Can change rule setting",
        "delete_rulesetting": "Can delete rule setting",
    },
    "channel": {
        "view_channel": "Can view channel",
        "add_channel": "Can add channel",
        "change_channel": "Can change channel",
        "delete_channel": "Can delete channel",
    },
}
VIEWER = [
    "view_alert",
    "view_alertevent",
    "view_delivery",
    "view_silence",
    "view_rulesetting",
    "view_channel",
]
OPERATOR = [
    *VIEWER,
    "acknowledge_alert",
    "manage_silence",
    "add_rulesetting",
    "change_rulesetting",
    "delete_rulesetting",
]
ADMIN = [*OPERATOR, "add_channel", "change_channel", "delete_channel"]
ROLES = {"viewer": VIEWER, "operator": OPERATOR, "admin": ADMIN}


def grant(apps: Any, schema_editor: Any) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    group = apps.get_model("auth", "Group")
    by_codename: dict[str, Any] = {}
    for model, names in PERMISSIONS.items():
        ct, _ = content_type.objects.get_or_create(app_label="alerts", model=model)
        for codename, name in names.items():
            perm, _ = permission.objects.get_or_create(
                content_type=ct, codename=codename, defaults={"name": name}
            )
            by_codename[codename] = perm
    for role, codenames in ROLES.items():
        g, _ = group.objects.get_or_create(name=role)
        g.permissions.add(*(by_codename[c] for c in codenames))


class Migration(migrations.Migration):
    dependencies = (
        ("alerts", "0001_initial"),
        ("deadletters", "0002_roles"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    )

    operations = (migrations.RunPython(grant, migrations.RunPython.noop),)
