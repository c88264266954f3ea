# Sourced by Spark's scripts (bin/spark-class) for the standalone cluster's master and
# worker (tests/analytics/standalone.py): the same JIT and collector as spark-defaults.conf.
export SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
