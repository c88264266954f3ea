"""The alert pages and their form posts (``web`` says what every one needs)."""

from django.urls import path

from lockstep.dashboard.alerts import channel_views, pages, rule_views, silence_views

urlpatterns = [
    path("alerts", pages.alerts_page, name="alerts"),
    path("alerts/silences", silence_views.silences_page, name="alert-silences"),
    path("alerts/silences/new", silence_views.create_silence_view, name="alert-silence-create"),
    path(
        "alerts/silences/<str:silence_id>/end",
        silence_views.end_silence_view,
        name="alert-silence-end",
    ),
    path("alerts/rules", rule_views.rules_page, name="alert-rules"),
    path("alerts/rules/save", rule_views.save_rule_setting_view, name="alert-rule-save"),
    path(
        "alerts/rules/<str:setting_id>/delete",
        rule_views.delete_rule_setting_view,
        name="alert-rule-delete",
    ),
    path("alerts/channels", channel_views.channels_page, name="alert-channels"),
    path("alerts/channels/new", channel_views.add_channel_view, name="alert-channel-add"),
    path("alerts/channels/<str:channel_id>", channel_views.channel_edit_page, name="alert-channel"),
    path(
        "alerts/channels/<str:channel_id>/save",
        channel_views.save_channel_view,
        name="alert-channel-save",
    ),
    path(
        "alerts/channels/<str:channel_id>/enabled",
        channel_views.enable_channel_view,
        name="alert-channel-enabled",
    ),
    path(
        "alerts/channels/<str:channel_id>/delete",
        channel_views.delete_channel_view,
        name="alert-channel-delete",
    ),
    path(
        "alerts/channels/<str:channel_id>/test",
        channel_views.test_channel_view,
        name="alert-channel-test",
    ),
    path("alerts/<str:alert_id>", pages.alert_page, name="alert-detail"),
    path("alerts/<str:alert_id>/acknowledge", pages.acknowledge_view, name="alert-acknowledge"),
    path(
        "alerts/<str:alert_id>/unacknowledge",
        pages.unacknowledge_view,
        name="alert-unacknowledge",
    ),
]
