"""Handlers used by the benchmarks."""

from collections.abc import Sequence

from workers.message import ConsumeContext, ConsumeStatus, Message


def noop(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    return ConsumeStatus.SUCCESS
