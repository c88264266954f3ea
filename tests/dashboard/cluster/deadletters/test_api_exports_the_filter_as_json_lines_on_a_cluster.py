"""The tests of
``tests/dashboard/deadletters/test_api_exports_the_filter_as_json_lines.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_api_exports_the_filter_as_json_lines import (
    pytestmark,
    test_it_exports_headers_with_broken_unicode_as_valid_json,
    test_it_exports_nothing_for_a_filter_that_matches_nothing,
    test_it_leaves_bodies_out_for_viewers_when_configured,
    test_it_refuses_bad_filters_before_streaming,
    test_it_streams_every_matching_dead_letter_with_its_exact_body,
    test_it_streams_page_by_page_under_asgi,
)

__all__ = [
    "pytestmark",
    "test_it_exports_headers_with_broken_unicode_as_valid_json",
    "test_it_exports_nothing_for_a_filter_that_matches_nothing",
    "test_it_leaves_bodies_out_for_viewers_when_configured",
    "test_it_refuses_bad_filters_before_streaming",
    "test_it_streams_every_matching_dead_letter_with_its_exact_body",
    "test_it_streams_page_by_page_under_asgi",
]
