from django.urls import path

from dashboard.monitor import views

urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("api/v1/overview", views.overview_api, name="api-overview"),
]

