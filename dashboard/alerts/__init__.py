"""Stuck-queue detection and alerts: rules over the live state, one alert per rule and
subject with a lifecycle (open, acknowledged, resolved), silences, and delivery to the
pages, email, webhooks and Prometheus. See docs/alerts.md."""
