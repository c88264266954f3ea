"""The tests of
``tests/dashboard/deadletters/test_api_shows_one_dead_letter.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_api_shows_one_dead_letter import (
    pytestmark,
    test_it_answers_unknown_or_bad_ids_with_json,
    test_it_cuts_huge_bodies_and_says_so,
    test_it_hides_bodies_and_headers_from_viewers_only_when_configured,
    test_it_links_a_dead_letter_and_its_replay_that_died_again,
    test_it_shows_a_body_that_is_not_utf8_as_hex_with_its_size,
    test_it_shows_a_json_body_pretty_and_as_sent,
    test_it_shows_a_text_body_as_text,
    test_it_shows_headers_attempts_and_history,
    test_it_survives_json_nested_too_deep_to_parse,
)

__all__ = [
    "pytestmark",
    "test_it_answers_unknown_or_bad_ids_with_json",
    "test_it_cuts_huge_bodies_and_says_so",
    "test_it_hides_bodies_and_headers_from_viewers_only_when_configured",
    "test_it_links_a_dead_letter_and_its_replay_that_died_again",
    "test_it_shows_a_body_that_is_not_utf8_as_hex_with_its_size",
    "test_it_shows_a_json_body_pretty_and_as_sent",
    "test_it_shows_a_text_body_as_text",
    "test_it_shows_headers_attempts_and_history",
    "test_it_survives_json_nested_too_deep_to_parse",
]
