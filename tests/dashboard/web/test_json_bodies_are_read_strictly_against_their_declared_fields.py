"""``web.json_input``: a JSON body is read as its declared model, strictly (no coercion,
no unknown field); whatever does not fit is a ``BadParameter`` naming the field and what
it must be."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import RequestFactory
from pydantic import Field, field_validator

from lockstep.dashboard.web.json_input import JsonBody, parse_body
from lockstep.dashboard.web.views import BadParameter


class Probe(JsonBody):
    name: str = ""
    count: int = 0
    loud: bool = False
    tags: list[str] = Field(default_factory=list)
    colour: str | None = None

    @field_validator("colour")
    @classmethod
    def _colour(cls, value: str | None) -> str | None:
        if value not in (None, "red", "blue"):
            raise ValueError("colour must be red or blue")
        return value


def _parse(raw: bytes | str, example: str = "") -> Probe:
    request = RequestFactory().post("/api/v1/probe", raw, content_type="application/json")
    return parse_body(request, Probe, example)


def _refusal(body: Any, example: str = "") -> str:
    with pytest.raises(BadParameter) as refused:
        _parse(body if isinstance(body, str | bytes) else json.dumps(body), example)
    return str(refused.value)


def test_a_body_that_fits_is_read_with_its_defaults() -> None:
    body = _parse(json.dumps({"name": "a", "count": 3, "tags": ["x"], "colour": "red"}))

    assert (body.name, body.count, body.loud, body.tags, body.colour) == (
        "a",
        3,
        False,
        ["x"],
        "red",
    )
    assert _parse(b"") == Probe()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"name": 1}, "name must be a string"),
        ({"count": "3"}, "count must be a whole number"),
        ({"count": True}, "count must be a whole number"),
        ({"loud": 0}, "loud must be true or false"),
        ({"tags": "x"}, "tags must be a list"),
        ({"tags": ["x", 2]}, "tags.1 must be a string"),
        ({"colour": "green"}, "colour must be red or blue"),
        ({"size": 1}, "unknown field 'size' (one of: ['colour', 'count', 'loud', 'name', 'tags'])"),
        ([1, 2], "the request body must be a JSON object"),
        ("not json", "the request body must be a JSON object"),
    ],
)
def test_what_does_not_fit_is_refused_naming_the_field(body: Any, said: str) -> None:
    assert _refusal(body) == said


def test_a_body_that_is_no_object_is_shown_the_example() -> None:
    assert _refusal("[]", example='{"name": "…"}') == (
        'the request body must be a JSON object: {"name": "…"}'
    )


def test_a_body_over_the_upload_limit_is_refused_as_too_large(settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100

    assert _refusal({"name": "x" * 200}) == "the request body is too large"
