"""The demo's switch (``switch.py``): break or fix the billing handler from the page."""

from django.urls import path

from lockstep.dashboard.demo.switch import billing_switch_view

urlpatterns = [
    path("demo/billing-handler", billing_switch_view, name="demo-billing-switch"),
]
