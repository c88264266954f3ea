"""Lockstep's Spark side: nightly analytics over the exported event log.

The job is split the usual way:

- :mod:`lockstep.analytics.extract` reads one day of the Parquet data set (columns in
  :mod:`lockstep.analytics.layout`, Spark's types in :mod:`lockstep.analytics.spark_layout`)
  into DataFrames with an explicit schema;
- :mod:`lockstep.analytics.transform` holds pure DataFrame → DataFrame functions;
- :mod:`lockstep.analytics.load` collects results into plain dicts for the caller to store;
- :mod:`lockstep.analytics.job` wires the three together;
  :mod:`lockstep.analytics.session` builds the SparkSession.

Nothing here imports Django: the same job runs under ``manage.py run_analytics``, under
Celery, or on its own with ``python -m lockstep.analytics --uri URI --date D --master URL``.
"""
