from django.urls import path

from dashboard.reports import views

urlpatterns = [
    path("analytics/", views.lag_report_page, name="lag-report"),
    path("api/v1/analytics/lag", views.lag_report_api, name="api-lag-report"),
]
