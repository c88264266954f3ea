"""``python -m lockstep``: the same as the ``lockstep`` command (lockstep/cli.py)."""

import sys

from lockstep.cli import main

sys.exit(main())
