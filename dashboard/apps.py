from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project itself as an app: what serves the whole site rather than one feature
    (the ``benchmark`` command, the shared static files). Like ``urls``, it may import every
    feature app (docs/architecture.md)."""

    name = "lockstep.dashboard"
    label = "dashboard"
    verbose_name = "Lockstep"
