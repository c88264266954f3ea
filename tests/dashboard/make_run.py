"""``make run`` as a new user runs it, in a terminal, for the tests of what it does and
prints (``tests/dashboard/test_make_run_*``): a real pseudo-terminal whose controlling
process is make, as under a shell; Ctrl-C is the byte the terminal turns into SIGINT for
its foreground group. Each run has a data directory and ports of its own."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import termios
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import free_port, probe_until

ROOT = Path(__file__).resolve().parents[2]
CTRL_C = b"\x03"
# The demo's handlers fail on purpose (HandlerFailure: demo: …) and say so at ERROR level,
# one line each: those lines are the demo working.
DEMO_FAILURES = ("HandlerFailure: demo:",)


class Terminal:
    """``make run`` on a pseudo-terminal of its own; everything it writes is kept."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = tmp / "data"
        self.port = free_port()
        cleared = ("LOCKSTEP_", "DATABASE_URL", "CELERY_", "CHANNELS_", "REDIS_URL", "DJANGO_")
        given = env or {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(cleared)}
        env |= {"LOCKSTEP_DATA_DIR": str(self.data_dir), "PORT": str(self.port)}
        env |= {"LOCKSTEP_REDIS_PORT": str(free_port()), "TERM": "dumb", **given}
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)
        self._output = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every process of the terminal has closed it
                return
            if not chunk:
                return
            self._output.extend(chunk)

    @property
    def output(self) -> str:
        return self._output.decode(errors="replace")

    def wait_for(self, text: str, timeout: float = 240) -> None:
        seen = probe_until(
            lambda: text in self.output or self.proc.poll() is not None, bool, timeout, 0.2
        )
        assert seen and text in self.output, f"no {text!r} in:\n{self.output[-4000:]}"

    def answers_http(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/", timeout=5):
                return True
        except (OSError, urllib.error.URLError):
            return False

    def ctrl_c(self) -> int:
        """Ctrl-C, then make's exit status."""
        os.write(self.master, CTRL_C)
        return self.proc.wait(180)

    def left_behind(self) -> list[str]:
        """The command lines of this run's processes still alive (all inherited its data
        directory: Redis, the dashboard's processes, the first report's timer)."""
        left = []
        for pid in _pids_with(self.data_dir):
            try:
                left.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue  # ended meanwhile
        return left

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(60)
        for pid in _pids_with(self.data_dir):
            os.kill(pid, 15)
        os.close(self.master)


# The keyboard's signals, which a shell in a terminal leaves at their defaults for the
# jobs it starts.
KEYBOARD_SIGNALS = (signal.SIGINT, signal.SIGQUIT)


def _take_terminal() -> None:
    """In the child, a session leader: its stdin (the pty) becomes its controlling terminal.

    The keyboard's signals go back to their defaults, as under a shell in a terminal: the
    test process may ignore SIGINT (pytest-xdist workers of the suite were seen to), and
    an ignored signal is inherited through exec. A shell started with SIGINT ignored cannot
    trap it, so bin/run would never see the Ctrl-C: make would run on, and the test would
    be about its runner instead of `make run`."""
    for sig in KEYBOARD_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _pids_with(data_dir: Path) -> list[int]:
    marker = f"LOCKSTEP_DATA_DIR={data_dir}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "environ").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@contextmanager
def make_run(tmp: Path, env: dict[str, str] | None = None) -> Iterator[Terminal]:
    """``make run`` in a terminal, with ``env`` added to its environment; whatever is left
    of it is stopped after the block."""
    term = Terminal(tmp, env)
    try:
        yield term
    finally:
        term.close()
