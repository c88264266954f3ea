"""``Subscription`` as code writes it: the handler a callable or a dotted path, and the
enum fields as plain strings; events and cards name a callable ``module.qualname``. JSON
settings stay dotted paths."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pytest

from lockstep import ConfigurationError, ConsumeContext, ConsumeStatus, Message, Subscription
from lockstep.workers.config import AfterDlq, Model, Ordering, subscriptions_from_json
from lockstep.workers.handlers import import_handler


def settle(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    return ConsumeStatus.SUCCESS


class Settler:
    def __call__(self, messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
        return ConsumeStatus.SUCCESS


def test_it_takes_a_callable_handler_and_names_it_by_module_and_qualified_name() -> None:
    sub = Subscription("orders", "billing", handler=settle)

    assert sub.handler is settle
    assert import_handler(sub.handler) is settle
    assert sub.handler_name == f"{__name__}.settle"


def test_it_names_a_callable_object_or_partial_by_its_class() -> None:
    assert Subscription("orders", "billing", Settler()).handler_name == f"{__name__}.Settler"
    partial = functools.partial(settle)
    assert Subscription("orders", "billing", partial).handler_name == "functools.partial"


def test_it_keeps_a_dotted_path_as_its_name() -> None:
    sub = Subscription("orders", "billing", handler="tests.workers.handlers.record")

    assert sub.handler_name == "tests.workers.handlers.record"


def test_it_takes_plain_strings_for_its_enum_fields_and_stores_the_members() -> None:
    sub = Subscription("orders", "billing", settle, ordering="key", after_dlq="hold")
    broadcast = Subscription("orders", "audit", settle, model="broadcasting")

    assert (sub.ordering, sub.after_dlq) == (Ordering.KEY, AfterDlq.HOLD)
    assert sub.ordering is Ordering.KEY
    assert broadcast.model is Model.BROADCASTING


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"ordering": "keys"}, "ordering must be one of queue, key, got 'keys'"),
        ({"model": "fanout"}, "model must be one of clustering, broadcasting, got 'fanout'"),
        ({"handler": ""}, "handler must be a callable or a non-empty dotted path"),
        ({"handler": 42}, "handler must be a callable or a non-empty dotted path"),
    ],
)
def test_it_refuses_a_bad_value_when_it_is_made(fields: dict[str, object], error: str) -> None:
    values: dict[str, object] = {"topic": "orders", "group": "billing", "handler": settle}
    values.update(fields)

    with pytest.raises(ConfigurationError, match=error):
        Subscription(**values)  # type: ignore[arg-type]


def test_json_settings_name_handlers_by_dotted_path_only() -> None:
    [sub] = subscriptions_from_json(
        '[{"topic": "orders", "group": "billing", "handler": "pkg.mod.func", "ordering": "key"}]'
    )
    assert (sub.handler, sub.ordering) == ("pkg.mod.func", Ordering.KEY)

    with pytest.raises(ConfigurationError, match="must be a dotted path string"):
        Subscription.from_mapping({"topic": "orders", "group": "billing", "handler": settle})
