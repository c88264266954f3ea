"""The monitor app's models are the dashboard's stored data, defined in the foundation
(``web.store.models``) under this app's label; importing them here registers them with it."""

from lockstep.dashboard.web.store.models import (
    Event,
    EventCounter,
    FleetStamp,
    GroupStatus,
    IngestCursor,
    QueueStatus,
    TimeZonePreference,
    Topic,
    TopicStatus,
)

__all__ = (
    "Event",
    "EventCounter",
    "FleetStamp",
    "GroupStatus",
    "IngestCursor",
    "QueueStatus",
    "TimeZonePreference",
    "Topic",
    "TopicStatus",
)
