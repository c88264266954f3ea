from django.apps import AppConfig


class MonitorConfig(AppConfig):
    name = "lockstep.dashboard.monitor"
    label = "monitor"
    verbose_name = "Lockstep monitor"

    def ready(self) -> None:
        from lockstep.dashboard.monitor.retention import prune_events, prune_samples
        from lockstep.dashboard.web.retention import PRUNERS

        PRUNERS.add("events", prune_events)
        PRUNERS.add("samples", prune_samples)
