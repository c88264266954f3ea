"""Properties of ``workers.offset_tracker`` (docs/lanes.md §5): the completed-ranges
encoding round-trips; for any order in which dispatched offsets complete, the low-water
mark is the smallest offset not done; the mark and the completed ranges together say
exactly which offsets are done; and a tracker restored from them — through any number of
restarts — skips exactly the offsets done before, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.workers.errors import LockstepError
from lockstep.workers.offset_tracker import OffsetTracker, decode_ranges, encode_ranges

offsets = st.integers(min_value=0, max_value=10_000)


def _expand(text: str) -> set[int]:
    return {o for a, b in decode_ranges(text) for o in range(a, b + 1)}


@given(st.sets(offsets, max_size=200))
def test_it_round_trips_any_set_of_offsets_through_the_range_encoding(done: set[int]) -> None:
    text = encode_ranges(done)
    ranges = decode_ranges(text)

    assert _expand(text) == done
    assert encode_ranges(sorted(done, reverse=True) + sorted(done)) == text
    # Canonical: ascending, maximal ranges (no two touch), so equal sets encode equally.
    assert all(a <= b for a, b in ranges)
    assert all(b1 + 1 < a2 for (_, b1), (a2, _) in pairwise(ranges))


@pytest.mark.parametrize("text", ["1-x", "5-3", "-1-2", "a", "1-2-3"])
def test_it_refuses_a_malformed_completed_string(text: str) -> None:
    with pytest.raises(LockstepError):
        decode_ranges(text)


@dataclass
class Run:
    """One owner's tracker together with the truth it must agree with."""

    tracker: OffsetTracker
    stream: list[int]  # offsets present in the queue (absent ones were never produced)
    # Offsets done so far, by this owner and the ones before it; an absent offset counts
    # once an owner dispatched past it (then the tracker knows it cannot be handled).
    done: set[int]
    position: int = 0  # index in ``stream`` of the next offset to dispatch
    pending: list[int] = field(default_factory=list)  # dispatched and not done

    def __post_init__(self) -> None:
        self.origin = self.tracker.low_water  # the committed offset it started from
        self.first = self.position

    @classmethod
    def restored(cls, previous: Run) -> Run:
        """The next owner, from what the previous one would commit. What it had in flight
        was not done: the next owner must handle it."""
        low, completed = previous.tracker.low_water, previous.tracker.completed_above()
        position = next(
            (i for i, o in enumerate(previous.stream) if o >= low), len(previous.stream)
        )
        return cls(OffsetTracker(low, completed), previous.stream, previous.done, position)

    def dispatch_next(self) -> None:
        """What the pull side does: dispatch, and skip what is recorded as done."""
        o = self.stream[self.position]
        self.done.update(range(self._next_dispatch(), o))  # absent ones (or done before)
        self.position += 1
        self.tracker.dispatched(o)
        # Dispatched once per owner, in order: done already means done by an earlier owner.
        assert self.tracker.already_done(o) == (o in self.done), o
        if self.tracker.already_done(o):
            self.tracker.done(o)
        else:
            self.pending.append(o)

    def complete(self, index: int) -> None:
        o = self.pending.pop(index)
        self.tracker.done(o)
        self.done.add(o)

    def _next_dispatch(self) -> int:
        return self.stream[self.position - 1] + 1 if self.position > self.first else self.origin

    def check(self) -> None:
        t = self.tracker
        low = self.origin
        while low in self.done:
            low += 1
        assert t.low_water == low
        assert t.in_flight == len(self.pending)
        claimed = _expand(t.completed_above())
        assert all(o > t.low_water for o in claimed)
        for o in self.stream:
            assert (o < t.low_water or o in claimed) == (o in self.done), o


@st.composite
def streams(draw: st.DrawFn) -> tuple[int, list[int]]:
    """A committed offset to start from, and the offsets present in the queue from there:
    dense, with a few absent (trimmed, or never produced)."""
    start = draw(st.integers(min_value=0, max_value=1000))
    present = draw(st.lists(st.integers(0, 5).map(bool), max_size=30))
    return start, [start + i for i, p in enumerate(present) if p]


def _drive(run: Run, data: st.DataObject, steps: int) -> None:
    """Interleave dispatching (in offset order) and completing (in any order), checking
    the tracker against the truth after every step; now and then repeat the completion of
    an offset this owner dispatched, which must change nothing."""
    for _ in range(steps):
        can_dispatch = run.position < len(run.stream)
        if not can_dispatch and not run.pending:
            return
        if can_dispatch and (not run.pending or data.draw(st.booleans(), label="dispatch")):
            run.dispatch_next()
        else:
            run.complete(data.draw(st.integers(0, len(run.pending) - 1), label="complete"))
            if data.draw(st.booleans(), label="repeat"):
                finished = [o for o in run.stream[run.first : run.position] if o in run.done]
                run.tracker.done(data.draw(st.sampled_from(finished), label="again"))
        run.check()


@given(streams(), st.data())
def test_it_keeps_the_low_water_mark_at_the_smallest_offset_not_done(
    start_and_stream: tuple[int, list[int]], data: st.DataObject
) -> None:
    start, stream = start_and_stream
    run = Run(OffsetTracker(start), stream, set())
    run.check()
    _drive(run, data, steps=10_000)

    assert run.tracker.in_flight == 0
    assert run.tracker.low_water == (stream[-1] + 1 if stream else start)
    assert run.tracker.completed_above() == ""


@given(st.integers(min_value=0, max_value=1000), st.permutations(range(40)))
def test_it_encodes_exactly_the_done_offsets_above_the_mark(start: int, order: list[int]) -> None:
    tracker = OffsetTracker(start)
    for o in range(start, start + 40):
        tracker.dispatched(o)
    done: set[int] = set()
    for i in order:
        tracker.done(start + i)
        done.add(start + i)
        low = tracker.low_water
        assert low == min(set(range(start, start + 41)) - done)
        assert set(range(start, low)) | _expand(tracker.completed_above()) == done


@settings(max_examples=300)  # restarts multiply the interleavings worth trying
@given(streams(), st.integers(1, 4), st.data())
def test_it_skips_exactly_the_offsets_done_before_each_restart(
    start_and_stream: tuple[int, list[int]], restarts: int, data: st.DataObject
) -> None:
    start, stream = start_and_stream
    run = Run(OffsetTracker(start), stream, set())
    for _ in range(restarts):
        _drive(run, data, steps=data.draw(st.integers(0, 40), label="steps"))
        run = Run.restored(run)  # Run.dispatch_next checks each skip against the truth
        run.check()
    _drive(run, data, steps=10_000)  # the last owner consumes to the end

    assert run.done >= set(stream)
    assert run.tracker.low_water == max([start, *(o + 1 for o in stream)])
    assert run.tracker.in_flight == 0 and run.tracker.completed_above() == ""
