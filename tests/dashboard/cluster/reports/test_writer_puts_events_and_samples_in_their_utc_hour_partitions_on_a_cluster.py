"""The tests of
``tests/dashboard/reports/test_writer_puts_events_and_samples_in_their_utc_hour_partitions.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports import (
    test_writer_puts_events_and_samples_in_their_utc_hour_partitions as source,
)

analytics_uri = source.analytics_uri
pytestmark = source.pytestmark
test_it_lifts_offsets_counts_and_error_types_out_of_each_events_details = (
    source.test_it_lifts_offsets_counts_and_error_types_out_of_each_events_details
)
test_it_maps_enriched_and_older_samples_alike_with_nulls_for_missing_fields = (
    source.test_it_maps_enriched_and_older_samples_alike_with_nulls_for_missing_fields
)
test_it_writes_each_row_into_the_partition_of_its_utc_hour = (
    source.test_it_writes_each_row_into_the_partition_of_its_utc_hour
)

__all__ = [
    "analytics_uri",
    "pytestmark",
    "test_it_lifts_offsets_counts_and_error_types_out_of_each_events_details",
    "test_it_maps_enriched_and_older_samples_alike_with_nulls_for_missing_fields",
    "test_it_writes_each_row_into_the_partition_of_its_utc_hour",
]
