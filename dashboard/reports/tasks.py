from celery import shared_task


@shared_task
def run_analytics() -> None:
    """Placeholder replaced by the analytics work."""
