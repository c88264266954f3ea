from django.apps import AppConfig


class DeadLettersConfig(AppConfig):
    name = "lockstep.dashboard.deadletters"
    label = "deadletters"
    verbose_name = "Lockstep dead letters"
