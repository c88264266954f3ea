from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "lockstep.dashboard.demo"
    label = "demo"
    verbose_name = "Lockstep demo"

    def ready(self) -> None:
        from lockstep.dashboard.demo.switch import billing_switch
        from lockstep.dashboard.web.panels import GROUP_PANELS

        GROUP_PANELS.add("demo", billing_switch)
