"""Whether a pool's process is CPU-bound, measured once a window (docs/reading.md, "How
many stepping threads").

Python code runs one thread at a time (the GIL), so once a process has about a core, more
threads in steps only hand the GIL and the pool's lock to one another. A process has all
the CPU it can get when:

- it uses about a core (``SATURATED_CORES``); or
- it uses a good part of one (``USED_CORES``) and its stepping threads spend the rest
  waiting for a CPU (their run-queue wait, ``/proc/self/task/<tid>/schedstat``): the
  machine is full, and the producer, Redis and this process share its cores. A process
  below ``USED_CORES`` is not CPU-bound however long it waits: its steps mostly wait on
  I/O, and more threads overlap that wait.

Either way only while at least ``OWN_CPU_SHARE`` of its CPU is the stepping threads':
a pool whose handlers mostly wait still grows in a process kept busy by something else
(another subscription's lanes). Where a thread's CPU clock or run-queue wait cannot be
read (not Linux), the process's CPU use alone decides.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

# The process's CPU use plus its stepping threads' run-queue wait, in cores, at which
# more stepping threads cannot help.
SATURATED_CORES = 0.8
# ... provided it uses this much CPU itself (module docstring).
USED_CORES = 0.5
# ... and the stepping threads used at least this share of that CPU.
OWN_CPU_SHARE = 0.25
CPU_WINDOW_S = 0.05


class Saturation:
    """The CPU use of a process and of a pool's stepping threads, over windows of
    ``CPU_WINDOW_S``. Not thread-safe: its caller holds the pool's lock."""

    def __init__(self) -> None:
        self.saturated: bool | None = None  # None: no window measured yet
        self._clocks: list[int] = []  # the stepping threads' CPU clocks
        self._schedstats: list[int] = []  # their /proc schedstat files, open
        self._at = 0.0  # the window's start (0: none yet)
        self._process_cpu = 0.0
        self._steps_cpu = 0.0
        self._steps_waited = 0.0

    def add_current_thread(self) -> None:
        """Measure the calling stepping thread from now on."""
        # A thread's CPU clock is not on every platform; /proc is Linux's.
        with contextlib.suppress(AttributeError, OSError):
            self._clocks.append(time.pthread_getcpuclockid(threading.get_ident()))
        path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        with contextlib.suppress(OSError):
            self._schedstats.append(os.open(path, os.O_RDONLY))

    def close(self) -> None:
        """The pool's threads ended: let go of the files."""
        for fd in self._schedstats:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._schedstats = []
        self._clocks = []

    def measure(self, now: float) -> bool:
        """Update ``saturated`` once a window has passed since the last; whether it did."""
        if now - self._at < CPU_WINDOW_S:
            return False
        process, steps, waited = time.process_time(), self._cpu(), self._waited()
        if self._at:
            self.saturated = cpu_bound(
                now - self._at,
                process - self._process_cpu,
                None if steps is None else steps - self._steps_cpu,
                max(0.0, waited - self._steps_waited),
            )
        self._at, self._process_cpu = now, process
        self._steps_cpu, self._steps_waited = steps or 0.0, waited
        return True

    def _cpu(self) -> float | None:
        """The CPU time the stepping threads used so far; None where a thread's CPU clock
        cannot be read."""
        try:
            return sum(time.clock_gettime(clock) for clock in self._clocks)
        except OSError:
            return None

    def _waited(self) -> float:
        """How long the stepping threads waited for a CPU so far (seconds): the second
        figure of a thread's schedstat, in nanoseconds."""
        total = 0
        for fd in self._schedstats:
            with contextlib.suppress(OSError, IndexError, ValueError):
                total += int(os.pread(fd, 128, 0).split()[1])
        return total / 1e9


def cpu_bound(seconds: float, used: float, steps_used: float | None, waited: float) -> bool:
    """Whether a process had all the CPU it could get over a window of ``seconds``: it
    used ``used`` seconds of CPU, ``steps_used`` of them in the stepping threads (None:
    not known), which waited ``waited`` seconds for a CPU (module docstring)."""
    own = steps_used is None or steps_used >= OWN_CPU_SHARE * used
    wanted = used + waited
    return own and used >= USED_CORES * seconds and wanted >= SATURATED_CORES * seconds
