"""JSON request bodies as declared models (pydantic), validated strictly.

A view names the body it takes as a ``JsonBody`` subclass: its fields, their JSON types
(no coercion: ``"1"`` is not a number, ``1`` is not a string, ``0`` is not ``false``),
and no field besides them. ``parse_body`` answers anything else with ``BadParameter``
(400) whose message names the field and what it must be, never a traceback: a body that
is not JSON or not an object, too large, of the wrong type, an unknown field, or a value
a field's validator refuses (its ``ValueError`` message is said as it is).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from pydantic import BaseModel, ConfigDict, ValidationError

from lockstep.dashboard.web.views import BadParameter

B = TypeVar("B", bound="JsonBody")

# What a field of each JSON type must be, said to the caller.
_EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "a whole number",
    "list_type": "a list",
    "dict_type": "an object",
}


class JsonBody(BaseModel):
    """A request body: strict JSON types, no unknown fields, immutable once read."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def parse_body(request: HttpRequest, schema: type[B], example: str = "") -> B:
    """The request's body as ``schema`` (an empty body is ``{}``); ``example`` is shown
    when the body is not a JSON object at all."""
    try:
        raw = request.body or b"{}"
    except RequestDataTooBig:
        raise BadParameter("the request body is too large") from None
    try:
        return schema.model_validate_json(raw)
    except ValidationError as exc:
        raise BadParameter(_said(exc, schema, example)) from None


def _said(exc: ValidationError, schema: type[JsonBody], example: str) -> str:
    error: Any = exc.errors(include_url=False)[0]
    kind, where = error["type"], ".".join(str(part) for part in error["loc"])
    if kind == "value_error":  # a validator's own words
        return str(error["ctx"]["error"])
    if kind in ("json_invalid", "model_type"):
        return "the request body must be a JSON object" + (f": {example}" if example else "")
    if kind == "extra_forbidden":
        known = sorted(schema.model_fields)
        return f"unknown field {where[:40]!r} (one of: {known})"
    if kind in _EXPECTED:
        return f"{where[:60]} must be {_EXPECTED[kind]}"
    return f"{where[:60] or 'the request body'}: {error['msg']}"
