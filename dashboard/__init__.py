"""Lockstep's web side (Django + Channels). The Celery app is loaded with Django, as
Celery's Django guide lays out, so ``shared_task`` binds to it."""

from lockstep.dashboard.celery import app as celery_app

__all__ = ("celery_app",)
