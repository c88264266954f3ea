"""Lockstep's ordered-consumption runtime on Redis Streams.

Runs anywhere there is a Redis: it never imports Django models. Installed, it is
``lockstep.workers``; its public names are re-exported by ``lockstep`` (docs/api.md).
"""

from lockstep.workers.config import Model, Subscription, Timings
from lockstep.workers.consumer import Consumer
from lockstep.workers.errors import (
    ConfigurationError,
    HandlerFailure,
    HandlerImportError,
    InvalidMessageError,
    LockstepError,
    SendError,
    UnknownTopicError,
)
from lockstep.workers.message import ConsumeContext, ConsumeStatus, Handler, Message
from lockstep.workers.producer import Producer, SendResult
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import create_topic

__all__ = [
    "ConfigurationError",
    "ConsumeContext",
    "ConsumeStatus",
    "Consumer",
    "Handler",
    "HandlerFailure",
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
