"""``lockstep dashboard --ingesters N`` supervises N ingester processes (one when unset,
none with ``--without ingester``), ``lockstep ingester`` takes the same option, and more
ingesters than event shards is said at start: the extra ones only stand by."""

from __future__ import annotations

import pytest

from lockstep import cli


def _ingesters_started(*argv: str) -> list[str]:
    args = cli._parser().parse_args(["dashboard", *argv])
    return [name for name in cli._processes(args, demo=False) if name.startswith("ingester")]


def test_it_starts_one_ingester_process_per_requested_ingester() -> None:
    assert _ingesters_started() == ["ingester"]
    assert _ingesters_started("--ingesters", "3") == ["ingester1", "ingester2", "ingester3"]
    assert _ingesters_started("--ingesters", "3", "--without", "ingester") == []


@pytest.mark.parametrize("command", ["dashboard", "ingester"])
def test_it_refuses_fewer_than_one_ingester(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli._parser().parse_args([command, "--ingesters", "0"])
    assert "must be at least 1" in capsys.readouterr().err


def test_the_ingester_role_takes_the_option_and_passes_the_rest_on() -> None:
    args = cli._parser().parse_args(["ingester", "--ingesters", "2", "--", "--batch", "500"])

    assert (args.ingesters, args.extra) == (2, ["--batch", "500"])


def test_it_says_when_ingesters_outnumber_the_event_shards(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", "4")
    cli._warn_about_idle_ingesters(4)
    assert capsys.readouterr().err == ""

    monkeypatch.setenv("LOCKSTEP_EVENT_SHARDS", "1")
    cli._warn_about_idle_ingesters(2)
    assert "2 ingesters for LOCKSTEP_EVENT_SHARDS=1" in capsys.readouterr().err
