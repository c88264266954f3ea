from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "lockstep.dashboard.reports"
    label = "reports"
    verbose_name = "Lockstep analytics reports"

    def ready(self) -> None:
        from lockstep.dashboard.reports.retention import prune_analytics_runs
        from lockstep.dashboard.web.retention import PRUNERS

        PRUNERS.add("analytics_runs", prune_analytics_runs)
