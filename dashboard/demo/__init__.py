"""The demo workload of ``make run``: an order lifecycle per order id."""

from lockstep.dashboard.demo.handlers import handle_billing, handle_order

__all__ = ["handle_billing", "handle_order"]
