from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "lockstep.dashboard.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from lockstep.dashboard.alerts.metrics import AlertsCollector
        from lockstep.dashboard.alerts.retention import prune_alerts, prune_test_deliveries
        from lockstep.dashboard.web.metrics import COLLECTORS
        from lockstep.dashboard.web.retention import PRUNERS

        PRUNERS.add("alerts", prune_alerts)
        PRUNERS.add("test_deliveries", prune_test_deliveries)
        COLLECTORS.add("alerts", AlertsCollector)
