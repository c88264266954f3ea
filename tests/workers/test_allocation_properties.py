"""Every consumer computes its share alone, so the allocation must partition the queues the
same way in every process, whatever order it learned the members in."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lockstep.workers.allocation import STRATEGIES, AllocationStrategy, AverageAllocation

member_ids = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=12, unique=True)
queue_ids = st.lists(st.integers(min_value=0, max_value=4096), max_size=64, unique=True)
strategies = pytest.mark.parametrize("strategy", list(STRATEGIES.values()), ids=list(STRATEGIES))


def _shares(
    strategy: AllocationStrategy, queues: list[int], members: list[str]
) -> dict[str, list[int]]:
    return {m: strategy.allocate(queues, members, m) for m in members}


@strategies
@given(queues=queue_ids, members=member_ids)
def test_it_assigns_every_queue_to_exactly_one_member(
    strategy: AllocationStrategy, queues: list[int], members: list[str]
) -> None:
    assigned = [q for share in _shares(strategy, queues, members).values() for q in share]

    assert sorted(assigned) == sorted(queues)


@strategies
@given(queues=queue_ids, members=member_ids)
def test_it_gives_members_shares_that_differ_by_at_most_one(
    strategy: AllocationStrategy, queues: list[int], members: list[str]
) -> None:
    sizes = [len(share) for share in _shares(strategy, queues, members).values()]

    assert max(sizes) - min(sizes) <= 1


@strategies
@given(queues=queue_ids, members=member_ids, seed=st.integers())
def test_it_allocates_the_same_whatever_order_members_and_queues_arrive_in(
    strategy: AllocationStrategy, queues: list[int], members: list[str], seed: int
) -> None:
    rng = random.Random(seed)
    shuffled_members, shuffled_queues = members[:], queues[:]
    rng.shuffle(shuffled_members)
    rng.shuffle(shuffled_queues)

    assert _shares(strategy, shuffled_queues, shuffled_members) == _shares(
        strategy, queues, members
    )


@strategies
@given(queues=queue_ids, members=member_ids, outsider=st.text(min_size=1, max_size=12))
def test_it_gives_nothing_to_a_consumer_that_is_not_a_member(
    strategy: AllocationStrategy, queues: list[int], members: list[str], outsider: str
) -> None:
    assume(outsider not in members)

    assert strategy.allocate(queues, members, outsider) == []


def test_it_gives_the_first_members_the_extra_queues_in_contiguous_blocks() -> None:
    shares = _shares(AverageAllocation(), list(range(8)), ["c", "a", "b"])

    assert shares == {"a": [0, 1, 2], "b": [3, 4, 5], "c": [6, 7]}
