"""Email through Django's email backend (``EMAIL_URL``): the headline as the subject,
the plain-text message as the body, to every address of the channel's target."""

from __future__ import annotations

import smtplib
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from lockstep.dashboard.alerts import payload as payloads
from lockstep.dashboard.alerts.channels.base import (
    ChannelKind,
    DeliveryError,
    message_text,
    one_line,
)
from lockstep.dashboard.alerts.env_channels import check_addresses
from lockstep.dashboard.alerts.models import Channel


class EmailKind(ChannelKind):
    name = "email"
    label = "Email"

    @classmethod
    def validate(cls, target: str, secret: str, format: str) -> None:
        check_addresses(target)

    def send(self, channel: Channel, payload: dict[str, Any], delivery_id: int | None) -> None:
        timeout = float(settings.LOCKSTEP_ALERT_SEND_TIMEOUT_SECONDS)
        message = EmailMessage(
            subject=one_line(payloads.headline(payload)),
            body=message_text(payload),
            from_email=settings.DEFAULT_FROM_EMAIL,
            to=check_addresses(channel.target),
            connection=get_connection(timeout=timeout),
        )
        try:
            message.send()
        except smtplib.SMTPRecipientsRefused as exc:  # every address refused: fix them
            raise DeliveryError(f"the mail server refused {exc.recipients}", False) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise DeliveryError(f"could not send the mail: {exc}", True) from None
