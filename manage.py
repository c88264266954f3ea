#!/usr/bin/env python
"""Django's command-line utility for the checkout (installed, ``lockstep manage`` is it)."""

import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lockstep.dashboard.settings")
    # The checkout keeps its data where `make run` does (docs/dashboard-service.md).
    os.environ.setdefault("LOCKSTEP_DATA_DIR", str(Path(__file__).resolve().parent / "var"))
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
