"""The tests of
``tests/dashboard/deadletters/test_pages_list_filters_sorts_and_pages.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_pages_list_filters_sorts_and_pages import (
    pytestmark,
    test_it_counts_dead_letters_per_group_on_the_groups_page,
    test_it_filters_and_keeps_the_filter_in_the_export_and_json_links,
    test_it_pages_newest_first_with_a_cursor_and_comes_back_to_the_first_page,
    test_it_says_when_no_dead_letter_matches,
    test_it_sorts_oldest_first_from_the_toggle,
)

__all__ = [
    "pytestmark",
    "test_it_counts_dead_letters_per_group_on_the_groups_page",
    "test_it_filters_and_keeps_the_filter_in_the_export_and_json_links",
    "test_it_pages_newest_first_with_a_cursor_and_comes_back_to_the_first_page",
    "test_it_says_when_no_dead_letter_matches",
    "test_it_sorts_oldest_first_from_the_toggle",
]
