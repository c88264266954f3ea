"""Lockstep's ordered-consumption runtime on Redis Streams.

Runs anywhere there is a Redis: it never imports Django models. Public interface::

    from workers import Producer, ConsumeStatus, Message, ConsumeContext, Subscription, QueueRef

"""

from workers.config import Model, Subscription, Timings
from workers.consumer import Consumer
from workers.errors import (
    ConfigurationError,
    HandlerImportError,
    InvalidMessageError,
    LockstepError,
    SendError,
    UnknownTopicError,
)
from workers.message import ConsumeContext, ConsumeStatus, Message
from workers.producer import Producer, SendResult
from workers.refs import QueueRef
from workers.topics import create_topic

__all__ = [
    "ConfigurationError",
    "ConsumeContext",
    "ConsumeStatus",
    "Consumer",
    "HandlerImportError",
    "InvalidMessageError",
    "LockstepError",
    "Message",
    "Model",
    "Producer",
    "QueueRef",
    "SendError",
    "SendResult",
    "Subscription",
    "Timings",
    "UnknownTopicError",
    "create_topic",
]
