"""A Celery worker embedding Lockstep's consumers, with Lockstep's data on a Redis Cluster
and the worker's broker on the suite's standalone redis-server (Celery does not speak the
cluster protocol): the standalone test, collected again here with this package's
``redis_url``."""

from tests.workers.test_celery_worker_embeds_ordered_consumers import (
    test_it_consumes_every_key_in_order_inside_a_celery_worker,
)

__all__ = ["test_it_consumes_every_key_in_order_inside_a_celery_worker"]
