"""Lockstep's Spark side: nightly analytics over the exported event log.

The job is split the usual way:

- :mod:`lockstep.analytics.extract` reads an exported event file (JSON lines, contract in
  :mod:`lockstep.analytics.schema`) into a DataFrame with an explicit schema;
- :mod:`lockstep.analytics.transform` holds pure DataFrame → DataFrame functions;
- :mod:`lockstep.analytics.load` collects results into plain dicts for the caller to store;
- :mod:`lockstep.analytics.job` wires the three together; :mod:`analytics.session` builds the
  SparkSession.

Nothing here imports Django: the same job runs under ``manage.py run_analytics``, under
Celery, or on its own with ``python -m lockstep.analytics EXPORT_FILE --master URL``.
"""
