#!/usr/bin/env python
"""Django's command-line utility for the checkout (installed, ``lockstep manage`` is it)."""

import os
import sys
from pathlib import Path

from lockstep.checkout import read_run_file


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lockstep.dashboard.settings")
    checkout = Path(__file__).resolve().parent
    # What `make run` runs with (its Redis, database, data), so a second shell acts on the
    # same (lockstep/checkout.py); the environment's own variables win.
    read_run_file(checkout)
    # The checkout keeps its data where `make run` does (docs/dashboard-service.md).
    os.environ.setdefault("LOCKSTEP_DATA_DIR", str(checkout / "var"))
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
