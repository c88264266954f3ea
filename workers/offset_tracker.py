"""Offsets of one queue under key ordering: a low-water mark plus what completed above it.

Contract:
- ``low_water`` is the smallest offset not yet done; every offset below it is done
  (handled, dead-lettered or parked). It is what gets committed.
- Offsets done above the mark are kept and encoded with the commit (``"a-b,c-d"``,
  inclusive ranges, ascending), so a new owner skips them instead of redoing them.
- Offsets are dispatched in increasing order; an offset may be marked done at most
  once (a second call is ignored) and only if it was dispatched or restored.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockstep.workers.errors import LockstepError


def encode_ranges(offsets: Iterable[int]) -> str:
    """Sorted distinct offsets → ``"a-b,c-d"`` (a single offset is ``"a-a"``)."""
    parts: list[str] = []
    start = prev = None
    for o in sorted(set(offsets)):
        if start is None:
            start = prev = o
        elif prev is not None and o == prev + 1:
            prev = o
        else:
            parts.append(f"{start}-{prev}")
            start = prev = o
    if start is not None:
        parts.append(f"{start}-{prev}")
    return ",".join(parts)


def decode_ranges(text: str) -> list[tuple[int, int]]:
    """Inverse of ``encode_ranges``; raises ``LockstepError`` on a malformed string."""
    out: list[tuple[int, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, sep, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi if sep else lo)
        except ValueError:
            raise LockstepError(f"malformed completed ranges {text!r}") from None
        if a > b or a < 0:
            raise LockstepError(f"malformed completed range {part!r}")
        out.append((a, b))
    return out


class OffsetTracker:
    def __init__(self, committed: int, completed: str = "") -> None:
        self.low_water = committed
        self.next_dispatch = committed
        self.in_flight = 0  # dispatched and not yet done
        self._done: set[int] = set()
        self._restored: set[int] = set()
        for a, b in decode_ranges(completed):
            self._restored.update(range(max(a, committed), b + 1))
        self.highest_completed = max(self._restored, default=committed - 1)

    def already_done(self, offset: int) -> bool:
        """True for an offset recorded as completed by a previous owner."""
        return offset in self._restored

    def dispatched(self, offset: int) -> None:
        if offset < self.next_dispatch:
            raise LockstepError(f"offset {offset} dispatched out of order")
        # Offsets absent from the stream (never produced, trimmed) cannot be handled.
        # (The mark may be past some of them already: see ``_advance``.)
        self._done.update(range(max(self.next_dispatch, self.low_water), offset))
        self.next_dispatch = offset + 1
        self.in_flight += 1
        self._advance()

    def done(self, offset: int) -> None:
        if offset >= self.next_dispatch or offset in self._done:
            return
        if offset < self.low_water:
            if offset in self._restored:  # restored, and passed by the mark before dispatch
                self._restored.discard(offset)
                self.in_flight -= 1
            return
        self._done.add(offset)
        self._restored.discard(offset)
        self.in_flight -= 1
        self.highest_completed = max(self.highest_completed, offset)
        self._advance()

    def completed_above(self) -> str:
        return encode_ranges(o for o in self._done | self._restored if o > self.low_water)

    def _advance(self) -> None:
        # Restored offsets count as done for the mark even before they are dispatched
        # again: stopping at one, the next commit would drop it (completed ranges hold
        # only offsets above the mark) and a later owner would redo it. They stay in
        # ``_restored`` until dispatched, so ``already_done`` still skips them.
        while self.low_water in self._done or self.low_water in self._restored:
            self._done.discard(self.low_water)
            self.low_water += 1
