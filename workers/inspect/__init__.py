"""The one read API over the runtime's Redis layout (docs/redis-layout.md).

The dashboard, the CLI and alert rules ask for named views here instead of issuing Redis
reads of their own. Each view is a typed value (``TypedDict`` or frozen dataclass, units
in field names: ``_ms``, ``_s``) read in a few pipelined round trips and ready to
serialise as JSON. Times are epoch milliseconds on Redis's clock unless a field says
otherwise. One queue is addressed by a ``QueueRef``, followed by the group where one is
meant.

- ``lag``: ``overview`` (every topic's lag per queue and group);
- ``state``: ``topic_state``, ``queue_state`` (lag joined with the owner's card);
- ``consumers``: ``consumers`` (live cards), ``registered_consumers`` (live or silent),
  ``queue_cards``, ``group_members``;
- ``messages``: ``messages_by_key``, ``message_at`` (per-group states), ``key_at``;
- ``dead_letters``: ``list_dead_letters``, ``get_dead_letter``, ``read_dead_letters`` (after
  a cursor), ``dead_letter_streams``, counts and ``dead_letters_present``;
- ``held``: held keys (``after_dlq = hold``) and their parked messages;
- topics: ``list_topics``, ``get_topic``, ``groups_of`` (from ``workers.topics``);
- what a consumer's card says of a queue: ``QueueSnapshot``, ``BlockedKey`` (from
  ``workers.cards``).

Only ``consumers`` writes: it forgets consumer ids whose card has expired.
"""

from lockstep.workers.cards import BlockedKey, QueueSnapshot
from lockstep.workers.inspect.clock import redis_now_ms
from lockstep.workers.inspect.consumers import (
    GroupMember,
    LiveConsumer,
    QueueCardKey,
    consumers,
    group_members,
    queue_cards,
    registered_consumers,
)
from lockstep.workers.inspect.dead_letters import (
    DeadLetter,
    dead_letter_counts,
    dead_letter_streams,
    dead_letters_per_group,
    dead_letters_per_queue,
    dead_letters_present,
    get_dead_letter,
    list_dead_letters,
    newest_dead_letter_ids,
    read_dead_letters,
)
from lockstep.workers.inspect.held import (
    HeldKey,
    Hold,
    held_keys,
    holds,
    parked_messages,
    parked_offsets,
)
from lockstep.workers.inspect.lag import GroupLag, Overview, QueueLag, TopicLag, overview
from lockstep.workers.inspect.message_states import GroupOffsets, MessageState
from lockstep.workers.inspect.messages import (
    KeyLookup,
    MessageNotFound,
    MessageView,
    OffsetLookup,
    StreamRange,
    key_at,
    keys_at,
    max_offset,
    message_at,
    messages_by_key,
    stream_ranges,
)
from lockstep.workers.inspect.state import (
    GroupState,
    QueueGroups,
    QueueState,
    TopicState,
    queue_of,
    queue_state,
    topic_state,
)
from lockstep.workers.topics import Topic, get_topic, groups_of, list_topics

__all__ = [
    "BlockedKey",
    "DeadLetter",
    "GroupLag",
    "GroupMember",
    "GroupOffsets",
    "GroupState",
    "HeldKey",
    "Hold",
    "KeyLookup",
    "LiveConsumer",
    "MessageNotFound",
    "MessageState",
    "MessageView",
    "OffsetLookup",
    "Overview",
    "QueueCardKey",
    "QueueGroups",
    "QueueLag",
    "QueueSnapshot",
    "QueueState",
    "StreamRange",
    "Topic",
    "TopicLag",
    "TopicState",
    "consumers",
    "dead_letter_counts",
    "dead_letter_streams",
    "dead_letters_per_group",
    "dead_letters_per_queue",
    "dead_letters_present",
    "get_dead_letter",
    "get_topic",
    "group_members",
    "groups_of",
    "held_keys",
    "holds",
    "key_at",
    "keys_at",
    "list_dead_letters",
    "list_topics",
    "max_offset",
    "message_at",
    "messages_by_key",
    "newest_dead_letter_ids",
    "overview",
    "parked_messages",
    "parked_offsets",
    "queue_cards",
    "queue_of",
    "queue_state",
    "read_dead_letters",
    "redis_now_ms",
    "registered_consumers",
    "stream_ranges",
    "topic_state",
]
