"""Lockstep's Spark side: nightly analytics over the exported event log.

The job is split the usual way:

- :mod:`analytics.extract` reads an exported event file (JSON lines, contract in
  :mod:`analytics.schema`) into a DataFrame with an explicit schema;
- :mod:`analytics.transform` holds pure DataFrame → DataFrame functions;
- :mod:`analytics.load` collects results into plain dicts for the caller to store;
- :mod:`analytics.job` wires the three together; :mod:`analytics.session` builds the
  SparkSession.

Nothing here imports Django: the same job runs under ``manage.py run_analytics``, under
Celery, or on its own with ``python -m analytics EXPORT_FILE --master URL``.
"""
