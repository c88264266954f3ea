from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "lockstep.dashboard.alerts"
    label = "alerts"
    verbose_name = "Alerts"
