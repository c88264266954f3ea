"""The alert pages' permissions (Django's, on the alert models; the roles that hold them
are made by the alerts' migration ``0002_roles``)."""

VIEW_ALERT = "alerts.view_alert"
ACKNOWLEDGE = "alerts.acknowledge_alert"
VIEW_SILENCE = "alerts.view_silence"
MANAGE_SILENCE = "alerts.manage_silence"
VIEW_RULES = "alerts.view_rulesetting"
CHANGE_RULES = "alerts.change_rulesetting"
VIEW_CHANNELS = "alerts.view_channel"
CHANGE_CHANNELS = "alerts.change_channel"
