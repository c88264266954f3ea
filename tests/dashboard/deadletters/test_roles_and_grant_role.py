"""The roles made by the migration and ``manage.py grant_role USER ROLE``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import ManagementUtility, call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


def _grant(*args: str) -> str:
    out = StringIO()
    call_command("grant_role", *args, stdout=out)
    return out.getvalue()


def _fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)  # permissions are cached per instance


def test_it_gives_each_role_its_permissions(viewer: User, operator: User, admin_user: User) -> None:
    viewer, operator, admin_user = _fresh(viewer), _fresh(operator), _fresh(admin_user)

    assert viewer.has_perm("deadletters.view_deadletter")
    assert not viewer.has_perm("deadletters.view_body")
    assert not viewer.has_perm("deadletters.replay_deadletter")
    assert operator.has_perms(
        [
            "deadletters.view_body",
            "deadletters.replay_deadletter",
            "deadletters.discard_deadletter",
            "deadletters.acknowledge_deadletter",
        ]
    )
    assert not operator.has_perm("auth.change_user")
    assert admin_user.has_perms(["deadletters.replay_deadletter", "auth.change_user"])
    assert (viewer.is_staff, operator.is_staff, admin_user.is_staff) == (False, False, True)


def test_it_replaces_the_role_a_user_had(django_user_model: type[User]) -> None:
    user = django_user_model.objects.create_user("sam", password="pw-123456789")
    other = Group.objects.create(name="night-shift")
    user.groups.add(other)

    _grant("sam", "admin")
    out = _grant("sam", "viewer")

    sam = User.objects.get(username="sam")
    assert out.strip() == "sam is now viewer"
    assert sorted(g.name for g in sam.groups.all()) == ["night-shift", "viewer"]
    assert not sam.is_staff
    assert not sam.has_perm("deadletters.replay_deadletter")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["nobody", "viewer"], "no user 'nobody'"),
        (["operator", "owner"], "unknown role 'owner' (one of: viewer, operator, admin)"),
    ],
)
def test_it_refuses_an_unknown_user_or_role(operator: User, args: list[str], error: str) -> None:
    with pytest.raises(CommandError) as raised:
        _grant(*args)

    assert str(raised.value) == error


def test_it_exits_non_zero_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        ManagementUtility(["manage.py", "grant_role", "nobody", "viewer"]).execute()

    assert exited.value.code == 1
    assert "no user 'nobody'" in capsys.readouterr().err
