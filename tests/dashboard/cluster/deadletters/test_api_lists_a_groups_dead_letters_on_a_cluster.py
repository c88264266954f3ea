"""The tests of
``tests/dashboard/deadletters/test_api_lists_a_groups_dead_letters.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_api_lists_a_groups_dead_letters import (
    pytestmark,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_answers_an_unknown_group_with_404_json,
    test_it_answers_bad_parameters_with_400_json,
    test_it_breaks_ties_in_time_by_id_across_pages,
    test_it_counts_what_still_waits_whatever_the_status_filter,
    test_it_filters_by_every_field,
    test_it_keeps_listing_a_group_that_is_gone_from_redis,
    test_it_lists_items_with_the_fields_the_cli_and_pages_use,
    test_it_pages_oldest_first_when_asked,
    test_it_pages_through_every_dead_letter_newest_first_without_repeats,
    test_it_refuses_a_cursor_made_for_the_other_sort,
    test_it_returns_script_in_keys_and_errors_as_plain_json_data,
)

__all__ = [
    "pytestmark",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_answers_an_unknown_group_with_404_json",
    "test_it_answers_bad_parameters_with_400_json",
    "test_it_breaks_ties_in_time_by_id_across_pages",
    "test_it_counts_what_still_waits_whatever_the_status_filter",
    "test_it_filters_by_every_field",
    "test_it_keeps_listing_a_group_that_is_gone_from_redis",
    "test_it_lists_items_with_the_fields_the_cli_and_pages_use",
    "test_it_pages_oldest_first_when_asked",
    "test_it_pages_through_every_dead_letter_newest_first_without_repeats",
    "test_it_refuses_a_cursor_made_for_the_other_sort",
    "test_it_returns_script_in_keys_and_errors_as_plain_json_data",
]
