"""The roles: Django groups ``viewer``, ``operator`` and ``admin`` with their permissions
(docs/dead-letters.md §4, "Roles"). Permissions are normally created after all migrations ran
(``post_migrate``); the ones named here are created now, the same way, so the groups can
hold them on a fresh database."""

from typing import Any

from django.db import migrations

# (app label, model) -> {codename: name}, for every permission a role holds.
PERMISSIONS: dict[tuple[str, str], dict[str, str]] = {
    ("deadletters", "deadletter"): {
        "view_deadletter": "Can view dead letter",
        "view_body": "Can see dead letters' bodies and headers",
        "replay_deadletter": "Can replay dead letters",
        "discard_deadletter": "Can discard dead letters",
        "acknowledge_deadletter": "Can acknowledge dead letters",
    },
    ("deadletters", "statuschange"): {"view_statuschange": "Can view status change"},
    ("deadletters", "actionrequest"): {"view_actionrequest": "Can view action request"},
    ("deadletters", "actionitem"): {"view_actionitem": "Can view action item"},
    ("deadletters", "auditentry"): {"view_auditentry": "Can view audit entry"},
    ("auth", "user"): {
        "view_user": "Can view user",
        "add_user": "Can add user",
        "change_user": "Can change user",
        "delete_user": "Can delete user",
    },
    ("auth", "group"): {"view_group": "Can view group", "change_group": "Can change group"},
    ("monitor", "topic"): {
        "view_topic": "Can view topic",
        "add_topic": "Can add topic",
        "change_topic": "Can change topic",
    },
}

VIEWER = [
    "deadletters.view_deadletter",
    "deadletters.view_statuschange",
    "deadletters.view_actionrequest",
    "deadletters.view_actionitem",
    "deadletters.view_auditentry",
]
OPERATOR = [
    *VIEWER,
    "deadletters.view_body",
    "deadletters.replay_deadletter",
    "deadletters.discard_deadletter",
    "deadletters.acknowledge_deadletter",
]
ADMIN = [
    *OPERATOR,
    "auth.view_user",
    "auth.add_user",
    "auth.change_user",
    "auth.delete_user",
    "auth.view_group",
    "auth.change_group",
    "monitor.view_topic",
    "monitor.add_topic",
    "monitor.change_topic",
]
ROLES = {"viewer": VIEWER, "operator": OPERATOR, "admin": ADMIN}


def create_roles(apps: Any, schema_editor: Any) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    group = apps.get_model("auth", "Group")
    by_name = {}
    for (app_label, model), codenames in PERMISSIONS.items():
        ct, _ = content_type.objects.get_or_create(app_label=app_label, model=model)
        for codename, name in codenames.items():
            perm, _ = permission.objects.get_or_create(
                content_type=ct, codename=codename, defaults={"name": name}
            )
            by_name[f"{app_label}.{codename}"] = perm
    for role, names in ROLES.items():
        g, _ = group.objects.get_or_create(name=role)
        g.permissions.add(*(by_name[name] for name in names))


def remove_roles(apps: Any, schema_editor: Any) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = (
        ("deadletters", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("monitor", "0002_ingest_position_event_counters"),
    )

    operations = (migrations.RunPython(create_roles, remove_roles),)
