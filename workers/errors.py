"""Errors raised by the Lockstep runtime. Each carries a message an operator can act on."""


class LockstepError(Exception):
    """Base class of every error the runtime raises on purpose."""


class ConfigurationError(LockstepError):
    """A setting or a subscription is missing or malformed."""


class UnknownTopicError(LockstepError):
    """The topic was never created (``manage.py create_topic NAME --queues N``)."""


class InvalidMessageError(LockstepError):
    """A message cannot be sent as given (wrong body type, too large, bad key)."""


class HandlerImportError(ConfigurationError):
    """A handler's dotted path does not name an importable callable."""
