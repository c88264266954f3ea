from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "lockstep.dashboard.reports"
    label = "reports"
    verbose_name = "Lockstep analytics reports"
