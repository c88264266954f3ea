"""Lockstep: ordered consumption on Redis Streams, for Python shops that run Celery.

The public runtime API (docs/api.md)::

    from lockstep import Producer, Subscription, ConsumeStatus, create_topic, SendError

    create_topic(redis_url, "orders", queues=8)
    Producer(redis_url).send("orders", key="order-42", body=b"paid")

and ``lockstep.celery.install(app, redis_url=..., subscriptions=[...])`` to consume in
order inside any Celery worker. Importing this package needs only the Redis client: the
dashboard (``lockstep.dashboard``, extra ``[dashboard]``) and the Spark job
(``lockstep.analytics``, extra ``[analytics]``) are imported only when asked for.
"""

from importlib.metadata import PackageNotFoundError, version

from lockstep.workers import (
    ConfigurationError,
    ConsumeContext,
    Consumer,
    ConsumeStatus,
    Handler,
    HandlerFailure,
    HandlerImportError,
    InvalidMessageError,
    LockstepError,
    Message,
    Model,
    Producer,
    QueueRef,
    SendError,
    SendResult,
    Subscription,
    Timings,
    UnknownTopicError,
    create_topic,
)

try:
    __version__ = version("lockstep")
except PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"

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
    "__version__",
    "create_topic",
]
