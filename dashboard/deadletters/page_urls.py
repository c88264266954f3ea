"""The dead-letter pages (the JSON API is in ``urls.py``)."""

from django.urls import path

from lockstep.dashboard.deadletters import pages

urlpatterns = [
    path("dead-letters", pages.dead_letter_groups_page, name="dead-letter-groups"),
    path("groups/<path:group>/dead-letters", pages.dead_letters_page, name="dead-letters"),
    path(
        "groups/<path:group>/dead-letters/<str:record_id>",
        pages.dead_letter_page,
        name="dead-letter",
    ),
    path("audit", pages.audit_page, name="audit"),
    # The groups page's JSON twin (the list, record and audit ones are in ``urls.py``).
    path("api/v1/dead-letters", pages.dead_letter_groups_api, name="api-dead-letter-groups"),
]
