from django.urls import path

from lockstep.dashboard.deadletters import action_views, views

# ``path:group``: a group name may contain "/" ("billing/eu"); each pattern still ends in
# a fixed part, so the group is what lies between "groups/" and "/dead-letters".
urlpatterns = [
    path(
        "api/v1/groups/<path:group>/dead-letters",
        views.dead_letters_api,
        name="api-dead-letters",
    ),
    path(
        "api/v1/groups/<path:group>/dead-letters.jsonl",
        views.export_view,
        name="api-dead-letters-export",
    ),
    # Before the record's route, which would take "actions" for a record id.
    path(
        "api/v1/groups/<path:group>/dead-letters/actions",
        action_views.actions_api,
        name="api-dead-letter-actions",
    ),
    path(
        "api/v1/groups/<path:group>/dead-letters/<str:record_id>",
        views.dead_letter_api,
        name="api-dead-letter",
    ),
    path(
        "api/v1/dead-letter-requests/<str:request_id>",
        action_views.request_api,
        name="api-dead-letter-request",
    ),
    path(
        "api/v1/dead-letter-requests/<str:request_id>/cancel",
        action_views.cancel_api,
        name="api-dead-letter-request-cancel",
    ),
    path("api/v1/audit", action_views.audit_api, name="api-audit"),
]
