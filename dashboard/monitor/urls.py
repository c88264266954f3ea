from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import path

from dashboard.monitor import views

urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("api/v1/overview", views.overview_api, name="api-overview"),
]

# Daphne serves no static files itself, so with DJANGO_DEBUG on (bin/run's default) Django
# serves them; the list is empty otherwise, where a front server (or WhiteNoise) must.
urlpatterns += staticfiles_urlpatterns()
