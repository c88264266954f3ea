from django.apps import AppConfig


class MonitorConfig(AppConfig):
    name = "lockstep.dashboard.monitor"
    label = "monitor"
    verbose_name = "Lockstep monitor"
