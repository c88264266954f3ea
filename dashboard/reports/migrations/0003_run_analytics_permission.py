"""The roles that may start an analytics run from the reports page ("Run now"): operators
and admins (docs/dead-letters.md §4, "Roles"). Viewers see the reports but may not start a
run: a run holds a Spark session for minutes.

The permission is normally created after all migrations ran (``post_migrate``); it is
created here, the same way, so the role groups can hold it on a fresh database."""

from typing import Any

from django.db import migrations

CODENAME, NAME = "run_analytics", "Can start an analytics run"
ROLES = ("operator", "admin")


def grant(apps: Any, schema_editor: Any) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    group = apps.get_model("auth", "Group")
    ct, _ = content_type.objects.get_or_create(app_label="reports", model="analyticsrun")
    perm, _ = permission.objects.get_or_create(
        content_type=ct, codename=CODENAME, defaults={"name": NAME}
    )
    for role in ROLES:
        g, _ = group.objects.get_or_create(name=role)
        g.permissions.add(perm)


def revoke(apps: Any, schema_editor: Any) -> None:
    permission = apps.get_model("auth", "Permission")
    group = apps.get_model("auth", "Group")
    perm = permission.objects.filter(content_type__app_label="reports", codename=CODENAME).first()
    if perm is not None:
        for g in group.objects.filter(name__in=ROLES):
            g.permissions.remove(perm)


class Migration(migrations.Migration):
    dependencies = (
        ("reports", "0002_analytics_day_results"),
        ("deadletters", "0002_roles"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    )

    operations = (migrations.RunPython(grant, revoke),)
