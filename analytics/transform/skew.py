"""Key skew: how each queue's messages spread over keys, and how the queues of a topic
compare (the hash skew that leaves some consumers idle and others drowning)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

TOP_KEYS = 10


def key_counts(messages: DataFrame) -> DataFrame:
    """``topic, queue, key, messages``."""
    return messages.groupBy("topic", "queue", "key").agg(F.count(F.lit(1)).alias("messages"))


def key_skew(messages: DataFrame) -> DataFrame:
    """One row per (topic, queue) with messages: ``messages``, ``keys`` (distinct),
    ``top_key`` (most messages; ties to the smallest key) and ``top_key_share``,
    ``top10_share`` (the ten busiest keys' share), ``max_over_mean`` (the busiest key's
    messages over the mean per key), ``share_of_topic``, ``over_topic_mean`` (the queue's
    messages over the mean of the topic's queues that had messages)."""
    counts = key_counts(messages)
    busiest = Window.partitionBy("topic", "queue").orderBy(F.col("messages").desc(), "key")
    per_queue = (
        counts.withColumn("rank", F.row_number().over(busiest))
        .groupBy("topic", "queue")
        .agg(
            F.sum("messages").alias("messages"),
            F.count(F.lit(1)).alias("keys"),
            F.max(F.when(F.col("rank") == 1, F.col("key"))).alias("top_key"),
            F.max("messages").alias("top_messages"),
            F.sum(F.when(F.col("rank") <= TOP_KEYS, F.col("messages"))).alias("top10_messages"),
        )
    )
    topic = Window.partitionBy("topic")
    return (
        per_queue.withColumn("top_key_share", F.col("top_messages") / F.col("messages"))
        .withColumn("top10_share", F.col("top10_messages") / F.col("messages"))
        .withColumn("max_over_mean", F.col("top_messages") / (F.col("messages") / F.col("keys")))
        .withColumn("share_of_topic", F.col("messages") / F.sum("messages").over(topic))
        .withColumn("over_topic_mean", F.col("messages") / F.avg("messages").over(topic))
        .select(
            "topic",
            "queue",
            "messages",
            "keys",
            "top_key",
            "top_key_share",
            "top10_share",
            "max_over_mean",
            "share_of_topic",
            "over_topic_mean",
        )
    )
