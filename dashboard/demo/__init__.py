"""The demo workload of ``make run``: an order lifecycle per order id."""

from dashboard.demo.handlers import handle_order

__all__ = ["handle_order"]
