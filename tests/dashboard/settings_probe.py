"""The dashboard's settings as a fresh process reads them from a given environment: the
settings module reads the environment once, at import, so each case needs its own
process. It starts in a temporary working directory (no ``.env`` of the checkout is
read) with a temporary HOME, and none of the suite's Lockstep variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Variables of the suite's own environment that would decide what these tests look at.
CLEARED = ("LOCKSTEP_", "DATABASE_URL", "XDG_DATA_HOME", "DJANGO_", "HOME")

_PROBE = """
import json, sys
from django.core.exceptions import ImproperlyConfigured
try:
    from django.conf import settings
    values = {expr: eval(expr, {"settings": settings}) for expr in sys.argv[1:]}
except ImproperlyConfigured as exc:
    print(json.dumps({"refused": str(exc)}))
else:
    print(json.dumps(values, default=str))
"""


class Refused(Exception):
    """The settings refused to load (ImproperlyConfigured); the message is its text."""


def probe_env(home: Path, **env: str) -> dict[str, str]:
    """The probe's environment: the suite's, cleared of ``CLEARED``, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    return {
        **base,
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "DJANGO_SETTINGS_MODULE": "lockstep.dashboard.settings",
        **env,
    }


def read_settings(cwd: Path, exprs: Sequence[str], **env: str) -> dict[str, object]:
    """Each of ``exprs`` (Python expressions over ``settings``, e.g.
    ``"settings.LOCKSTEP_DEMO"``) as a JSON value (paths as strings), by expression, when
    the settings are loaded in ``cwd`` with ``env`` added; ``Refused`` when they refuse
    to load."""
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *exprs],
        cwd=cwd,
        env=probe_env(home, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    values: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    if "refused" in values:
        raise Refused(values["refused"])
    return values
