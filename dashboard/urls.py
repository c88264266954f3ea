from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView

from lockstep.dashboard.monitor.metrics import metrics_view

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the pages link to.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("metrics", metrics_view, name="metrics"),  # Prometheus: bearer token (see metrics.py)
    path("", include("lockstep.dashboard.monitor.urls")),
    path("", include("lockstep.dashboard.reports.urls")),
    path("", include("lockstep.dashboard.deadletters.urls")),
    path("", include("lockstep.dashboard.deadletters.page_urls")),
    path("", include("lockstep.dashboard.alerts.urls")),
    path("", include("lockstep.dashboard.demo.urls")),
]

# Addresses no route matches, Django's own refusals and unexpected exceptions: JSON under
# /api/, the error page elsewhere (as every view answers its own errors).
handler400 = "lockstep.dashboard.web.errors.bad_request"
handler403 = "lockstep.dashboard.web.errors.forbidden"
handler404 = "lockstep.dashboard.web.errors.not_found"
handler500 = "lockstep.dashboard.web.errors.server_error"
