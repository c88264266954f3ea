"""Queue allocation strategies (RocketMQ's ``AllocateMessageQueueStrategy``).

Every consumer runs the same pure function over the same sorted member list, so all agree
on the assignment without talking to each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence


class AllocationStrategy(ABC):
    name: str

    @abstractmethod
    def allocate(self, queues: Sequence[int], members: Sequence[str], me: str) -> list[int]:
        """The queues ``me`` should own. ``members`` need not be sorted; a consumer that is
        not (yet) a member gets nothing."""


class AverageAllocation(AllocationStrategy):
    """``AllocateMessageQueueAveragely``: contiguous blocks; the first ``len(queues) %
    len(members)`` members get one extra queue."""

    name = "average"

    def allocate(self, queues: Sequence[int], members: Sequence[str], me: str) -> list[int]:
        ordered_members = sorted(members)
        if me not in ordered_members or not queues:
            return []
        ordered_queues = sorted(queues)
        index = ordered_members.index(me)
        n, m = len(ordered_queues), len(ordered_members)
        base, extra = divmod(n, m)
        size = base + (1 if index < extra else 0)
        start = index * base + min(index, extra)
        return ordered_queues[start : start + size]


class CircleAllocation(AllocationStrategy):
    """``AllocateMessageQueueAveragelyByCircle``: queue i goes to member i % m."""

    name = "circle"

    def allocate(self, queues: Sequence[int], members: Sequence[str], me: str) -> list[int]:
        ordered_members = sorted(members)
        if me not in ordered_members:
            return []
        index = ordered_members.index(me)
        return [q for i, q in enumerate(sorted(queues)) if i % len(ordered_members) == index]


STRATEGIES: dict[str, AllocationStrategy] = {
    s.name: s for s in (AverageAllocation(), CircleAllocation())
}
