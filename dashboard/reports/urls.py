from django.urls import path

from lockstep.dashboard.reports import views

urlpatterns = [
    path("analytics/", views.report_page, name="analytics"),
    path("analytics/run", views.start_run_page, name="analytics-run"),
    path("api/v1/analytics/report", views.report_api, name="api-analytics-report"),
    path("api/v1/analytics/runs", views.start_run_api, name="api-analytics-runs"),
    path("api/v1/analytics/runs/<str:run_id>", views.run_api, name="api-analytics-run"),
]
