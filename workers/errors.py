"""Errors raised by the Lockstep runtime, each with a message an operator can act on; and
``HandlerFailure``, which handlers raise."""

from __future__ import annotations


class LockstepError(Exception):
    """Base class of every error the runtime raises on purpose."""


class ConfigurationError(LockstepError):
    """A setting or a subscription is missing or malformed."""


class UnknownTopicError(LockstepError):
    """The topic was never created (``lockstep.create_topic``)."""


class InvalidMessageError(LockstepError):
    """A message cannot be sent as given (wrong body type, too large, bad key)."""


class HandlerImportError(ConfigurationError):
    """A handler's dotted path does not name an importable callable."""


class SendError(LockstepError):
    """A send failed on its way to or from Redis. ``maybe_stored`` is False only when it is
    certain that nothing reached Redis (sending again cannot duplicate); when True the
    message may be stored: send it again with the same idempotency key, which stores it at
    most once and returns its first offset."""

    def __init__(self, reason: str, maybe_stored: bool) -> None:
        self.reason = reason
        self.maybe_stored = maybe_stored
        if maybe_stored:
            verdict = (
                "the message may have been stored; send it again with the same "
                "idempotency key to store it at most once"
            )
        else:
            verdict = "the message was not stored; sending it again is safe"
        super().__init__(f"{reason}: {verdict}")

    def __reduce__(self) -> tuple[type[SendError], tuple[str, bool]]:
        # Exceptions pickle their args; ours has two, so say how (Celery results, logging).
        return type(self), (self.reason, self.maybe_stored)


class HandlerFailure(Exception):
    """Raised by a handler for a failure its message tells in full (a card declined, a
    mail server that timed out). It is retried and dead-lettered like any exception, but
    the handler's log record is one line, without the traceback, which would only point
    at the ``raise`` (as Django prints a ``CommandError``). The dead letter's attempts
    still keep their traceback. Not a ``LockstepError``: the runtime never raises it."""
