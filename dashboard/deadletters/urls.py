from django.urls import path

from dashboard.deadletters import views

urlpatterns = [
    path(
        "api/v1/groups/<str:group>/dead-letters",
        views.dead_letters_api,
        name="api-dead-letters",
    ),
    path(
        "api/v1/groups/<str:group>/dead-letters.jsonl",
        views.export_view,
        name="api-dead-letters-export",
    ),
    path(
        "api/v1/groups/<str:group>/dead-letters/<str:record_id>",
        views.dead_letter_api,
        name="api-dead-letter",
    ),
]
