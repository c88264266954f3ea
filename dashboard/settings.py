"""Django settings. Every value comes from the environment (see ``.env.example``).

Read from ``LOCKSTEP_ENV_FILE`` when set, else from ``.env`` in the working directory when
there is one; variables already in the environment win over the file. Everything written
(database, analytics data set, collected static files) goes under ``LOCKSTEP_DATA_DIR``,
never inside the installed package; reading the settings writes nothing (``lockstep``
creates the folder: docs/dashboard-service.md)."""

import os
from datetime import timedelta
from pathlib import Path

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from lockstep.dashboard.env import (
    analytics_uri,
    celery_queue,
    data_dir,
    env_bool,
    env_choice,
    env_file,
    env_float,
    env_int,
    env_str,
    nightly_at,
    side_redis_urls,
    spark_conf,
    weak_secret_key,
)
from lockstep.dashboard.task_log import CELERY_TASK_LOGGERS, frequent_tasks
from lockstep.workers.config import subscriptions_from_json
from lockstep.workers.errors import ConfigurationError

# The installed package: templates and static files ship inside it (read only).
PACKAGE_DIR = Path(__file__).parent.parent

_env = environ.Env()
_env_file = env_file(env_str("LOCKSTEP_ENV_FILE", ""), Path.cwd())
if _env_file is not None:
    environ.Env.read_env(str(_env_file))
# Shown by `lockstep dashboard` at start, so an operator sees which file was read.
LOCKSTEP_ENV_FILE = str(_env_file or "")

# Database, analytics data set and collected static files (docs/dashboard-service.md).
LOCKSTEP_DATA_DIR = data_dir(env_str("LOCKSTEP_DATA_DIR", ""), PACKAGE_DIR, os.environ)

# One switch for a production deployment (see docs/deployment.md): the
# secret key must come from the environment and be strong, debug stays off, and the HTTPS
# settings below default to on (each DJANGO_SECURE_* variable still overrides).
LOCKSTEP_ENV = env_choice("LOCKSTEP_ENV", "development", ("development", "production"))
PRODUCTION = LOCKSTEP_ENV == "production"

DEBUG = env_bool("DJANGO_DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG=true is refused with LOCKSTEP_ENV=production")
DEVELOPMENT_SECRET_KEY = "lockstep-insecure-development-key-change-me"
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
# LOCKSTEP_REQUIRE_SECRET_KEY is the older, narrower switch; production implies it.
if PRODUCTION or (not DEBUG and env_bool("LOCKSTEP_REQUIRE_SECRET_KEY", False)):
    secret_key_problem = weak_secret_key(SECRET_KEY, DEVELOPMENT_SECRET_KEY)
    if secret_key_problem:
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY {secret_key_problem}")
SECRET_KEY = SECRET_KEY or DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = [
    h.strip()
    for h in env_str("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
# Origins allowed to POST forms, e.g. https://lockstep.example.com; needed only when the
# proxy's public scheme, host or port differs from what Django sees in Host.
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in env_str("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

# Behind HTTPS: on by default in production; `manage.py check --deploy` then has no
# W004/W005 (HSTS), W008 (SSL redirect), W012 (session cookie) or W016 (CSRF cookie)
# warning. A year of HSTS is what the check asks for.
SECURE_HSTS_SECONDS = env_int(
    "DJANGO_SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0, minimum=0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", PRODUCTION)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# A refused form gets the dashboard's page (JSON under /api/), not Django's bare one.
CSRF_FAILURE_VIEW = "lockstep.dashboard.web.errors.csrf_failure"
if env_bool("DJANGO_BEHIND_PROXY", False):
    # The reverse proxy terminates TLS and says so in this header.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# W021 asks for HSTS preloading, which only the owner of the registrable domain can ask
# for, affects every other site under it and takes months to undo: an opt-in
# (DJANGO_SECURE_HSTS_PRELOAD), not something a dashboard turns on by default.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]

# Not "daphne": it serves the site as a program (bin/run, `lockstep dashboard`); as an app
# it only swaps in its own `runserver`, and every management command, Celery worker and
# ingester would import Twisted for it (a fifth of a second of CPU each).
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "channels",
    "django_celery_beat",
    "lockstep.dashboard.apps.ProjectConfig",
    "lockstep.dashboard.monitor",
    "lockstep.dashboard.reports",
    "lockstep.dashboard.deadletters",
    "lockstep.dashboard.alerts",
    "lockstep.dashboard.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication: the signed-in user's time zone for every time on the page.
    "lockstep.dashboard.web.time_zone.ViewerTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a refused login into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "lockstep.dashboard.urls"
ASGI_APPLICATION = "lockstep.dashboard.asgi.application"
WSGI_APPLICATION = "lockstep.dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [PACKAGE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# An empty DATABASE_URL (as .env.example has it) means the default too.
SQLITE_DEFAULT_URL = f"sqlite:///{LOCKSTEP_DATA_DIR / 'db.sqlite3'}"
DATABASES = {
    "default": environ.Env.db_url_config(env_str("DATABASE_URL", "").strip() or SQLITE_DEFAULT_URL)
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The ingester writes while pages read: WAL and a busy timeout avoid "database is locked".
    # Several processes also write (ingester, sync, replays in Celery and in the web
    # process): a transaction that read first and then writes fails at once with "database
    # is locked" when another process committed in between (the busy timeout does not
    # apply to that case); IMMEDIATE transactions take the write lock when they begin, so
    # they wait (up to the timeout) instead.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL;",
            "transaction_mode": "IMMEDIATE",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Login throttling (django-axes): after LOCKSTEP_LOGIN_FAILURE_LIMIT failed logins for one
# username from one address, logging in as it from there is refused, even with the right
# password, for LOCKSTEP_LOGIN_COOLOFF_MINUTES. Five tries forgive typos; fifteen minutes
# make guessing a password hopeless (at most 480 guesses a day per address) without
# locking a colleague out for the day. Keyed on the pair, so one address guessing cannot
# lock everybody out (behind a proxy all users share its address: run daphne with
# --proxy-headers so the client's address is seen).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses before a password is checked
    "django.contrib.auth.backends.ModelBackend",
]
LOCKSTEP_LOGIN_FAILURE_LIMIT = env_int("LOCKSTEP_LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOCKSTEP_LOGIN_COOLOFF_MINUTES = env_int("LOCKSTEP_LOGIN_COOLOFF_MINUTES", 15, minimum=1)
AXES_FAILURE_LIMIT = LOCKSTEP_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOCKSTEP_LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True  # a successful login forgives the earlier typos
AXES_LOCKOUT_CALLABLE = "lockstep.dashboard.lockout.locked_out"
# Not its "AXES: BEGIN" line in every process's log at start (nothing to act on), nor the
# user agent in its lockout records: they name the username and address it locks.
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# The pages' CSS and JS are served by the ASGI application itself (asgi.py wraps it in
# Django's static files handler, which reads them from the package, DEBUG or not): no
# collectstatic step and no web server in front is needed. STATIC_ROOT is only for those
# who run collectstatic to have their own proxy serve them. The shared files
# (dashboard/static) are the project app's (``apps.ProjectConfig``), found like every app's.
STATIC_URL = "static/"
STATIC_ROOT = LOCKSTEP_DATA_DIR / "staticfiles"

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# Celery's broker and the channel layer default to REDIS_URL's server. On a Redis Cluster
# (docs/cluster.md) they cannot: neither Celery's Redis transport nor channels-redis
# speaks the cluster protocol, so both must name a standalone Redis of their own.
CELERY_BROKER_URL, CHANNELS_REDIS_URL = side_redis_urls(
    REDIS_URL, env_str("CELERY_BROKER_URL", ""), env_str("CHANNELS_REDIS_URL", "")
)

# channels_redis blocks 5 s in BZPOPMIN per receive; 30 s more rides out a Redis that
# stalls (a slow disk, a fork) without cutting any socket, and still notices a dead
# connection within a minute.
CHANNEL_LAYER_READ_TIMEOUT_S = 35.0
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # The socket read timeout must outlast channels_redis's blocking pop
            # (BZPOPMIN, 5 s) plus a stall of Redis: redis-py 8 reads with a 5 s timeout
            # by default, so an idle socket's pop timed out whenever the reply came late
            # and the socket died with a traceback (docs/dashboard-service.md, "Redis
            # stalls").
            "hosts": [
                {
                    "address": CHANNELS_REDIS_URL,
                    "socket_timeout": CHANNEL_LAYER_READ_TIMEOUT_S,
                    "socket_keepalive": True,
                }
            ],
            # Pushes are "something changed" hints that pages re-read on a gap: dropping
            # beyond this backlog or age is safe and keeps a slow browser from piling up.
            "capacity": 1000,
            "expiry": 30,
        },
    },
}

# Dead letters appear on the pages within this long of reaching their stream; each sync
# with nothing new costs one XRANGE per (queue, group), so a short interval is cheap.
LOCKSTEP_DEAD_LETTER_SYNC_SECONDS = env_float("LOCKSTEP_DEAD_LETTER_SYNC_SECONDS", 2.0, minimum=0.5)
# Bodies and headers may hold personal data: when true, only users with the
# deadletters.view_body permission (operators, admins) see them.
LOCKSTEP_HIDE_BODIES_FROM_VIEWERS = env_bool("LOCKSTEP_HIDE_BODIES_FROM_VIEWERS", False)
# Replays and discards act on at most this many dead letters a second (0 = no limit):
# a bulk replay of thousands must not flood the queues (and the consumers behind them)
# faster than normal traffic; 50 a second replays 10,000 in a few minutes.
LOCKSTEP_REPLAY_RATE_PER_S = env_float("LOCKSTEP_REPLAY_RATE_PER_S", 50.0, minimum=0.0)

CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# The dashboard's tasks (beat's and the web side's) go to a queue of their own, and its
# worker consumes only that one (a worker without -Q consumes the default queue): other
# workers on a shared broker listen on Celery's "celery" queue and would take them and
# drop them as unregistered tasks.
LOCKSTEP_CELERY_QUEUE = celery_queue(env_str("LOCKSTEP_CELERY_QUEUE", "lockstep"))
CELERY_TASK_DEFAULT_QUEUE = LOCKSTEP_CELERY_QUEUE
# The analytics runs go to a queue of their own, consumed only by the `analytics` worker
# role (docs/dashboard-service.md): a run holds its worker for minutes and a Spark JVM of
# a gigabyte or more, which must neither delay the live tasks (sample_lag every 10 s) nor
# stay in their worker after the run.
LOCKSTEP_ANALYTICS_CELERY_QUEUE = celery_queue(
    env_str("LOCKSTEP_ANALYTICS_CELERY_QUEUE", "") or f"{LOCKSTEP_CELERY_QUEUE}.analytics",
    "LOCKSTEP_ANALYTICS_CELERY_QUEUE",
)
CELERY_TASK_ROUTES = {
    f"lockstep.dashboard.reports.tasks.{name}": {"queue": LOCKSTEP_ANALYTICS_CELERY_QUEUE}
    for name in ("run_nightly_analytics", "run_requested_analytics")
}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# About 90 samples per 15-minute chart; stuck detection and lag_trend read them too.
LOCKSTEP_LAG_SAMPLE_SECONDS = env_float("LOCKSTEP_LAG_SAMPLE_SECONDS", 10.0, minimum=1.0)
# Analytics (docs/analytics.md): how often new events, samples and messages are appended
# to the data set (s), and when (UTC, HH:MM) the nightly run analyses the day before.
LOCKSTEP_ANALYTICS_WRITE_SECONDS = env_float("LOCKSTEP_ANALYTICS_WRITE_SECONDS", 60.0, minimum=1.0)
LOCKSTEP_ANALYTICS_NIGHTLY_AT = nightly_at(env_str("LOCKSTEP_ANALYTICS_NIGHTLY_AT", "02:30"))
CELERY_BEAT_SCHEDULE = {
    "lockstep-sample-lag": {
        "task": "lockstep.dashboard.monitor.tasks.sample_lag",
        "schedule": LOCKSTEP_LAG_SAMPLE_SECONDS,
        # A tick still waiting when the next is sent is superseded by it: behind a long
        # task, samples resume at the next tick instead of a backlog of stale ones.
        "options": {"expires": LOCKSTEP_LAG_SAMPLE_SECONDS},
    },
    "lockstep-prune-events": {
        "task": "lockstep.dashboard.monitor.tasks.prune_events",
        "schedule": crontab(minute="17"),
    },
    "lockstep-sync-dead-letters": {
        "task": "lockstep.dashboard.deadletters.tasks.sync_dead_letters",
        "schedule": LOCKSTEP_DEAD_LETTER_SYNC_SECONDS,
        # A tick not started by the next one is superseded by it: runs never pile up.
        "options": {"expires": LOCKSTEP_DEAD_LETTER_SYNC_SECONDS},
    },
    "lockstep-nightly-analytics": {
        "task": "lockstep.dashboard.reports.tasks.run_nightly_analytics",
        "schedule": crontab(
            hour=str(LOCKSTEP_ANALYTICS_NIGHTLY_AT[0]), minute=str(LOCKSTEP_ANALYTICS_NIGHTLY_AT[1])
        ),
    },
    "lockstep-write-analytics-data": {
        "task": "lockstep.dashboard.reports.tasks.write_analytics_data",
        "schedule": LOCKSTEP_ANALYTICS_WRITE_SECONDS,
        "options": {"expires": LOCKSTEP_ANALYTICS_WRITE_SECONDS},
    },
}

# The demo of ``make run`` (LOCKSTEP_DEMO=true): a queue-ordered mailer, and a key-ordered
# billing group whose handler fails for poison orders (dead letters, held keys) until an
# operator fixes it. Never without the switch: beside a real system, a topic named
# "orders" would be consumed by the demo's handlers.
LOCKSTEP_DEMO = env_bool("LOCKSTEP_DEMO", False)
DEMO_SUBSCRIPTIONS = (
    '[{"topic": "orders", "group": "mailer", "handler": "lockstep.dashboard.demo.handle_order"}, '
    '{"topic": "orders", "group": "billing", "handler": "lockstep.dashboard.demo.handle_billing", '
    '"ordering": "key", "after_dlq": "hold", "max_reconsume_times": 3, "lanes": 8, '
    '"retry_initial_ms": 500, "retry_max_ms": 2000}]'
)
try:
    LOCKSTEP_SUBSCRIPTIONS = subscriptions_from_json(
        env_str("LOCKSTEP_SUBSCRIPTIONS", DEMO_SUBSCRIPTIONS if LOCKSTEP_DEMO else "[]")
    )
except ConfigurationError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# RocketMQ expires an unrenewed queue lock after 60 s; a queue that has not moved for as
# long is as good as unowned, and a blocked key that long will not heal by retrying.
LOCKSTEP_STUCK_AFTER_SECONDS = env_float("LOCKSTEP_STUCK_AFTER_SECONDS", 60.0, minimum=1.0)
# A week of history for the pages; the nightly analytics read each day long before that.
LOCKSTEP_EVENT_RETENTION_DAYS = env_int("LOCKSTEP_EVENT_RETENTION_DAYS", 7, minimum=1)
# Samples (lag_sampled, key_state, lanes) are read over a day at most (charts of up to
# 1,440 minutes, stuck detection, the nightly analytics): two days keeps every reader
# whole with a day to spare, and they are most of what remains once commits are coalesced.
LOCKSTEP_SAMPLE_RETENTION_DAYS = env_int("LOCKSTEP_SAMPLE_RETENTION_DAYS", 2, minimum=1)
# Nightly analytics runs (one a day, a row per queue) and resolved alerts with their
# timelines and deliveries are small: a quarter of history for trends and post-mortems.
LOCKSTEP_REPORT_RETENTION_DAYS = env_int("LOCKSTEP_REPORT_RETENTION_DAYS", 90, minimum=1)
LOCKSTEP_ALERT_RETENTION_DAYS = env_int("LOCKSTEP_ALERT_RETENTION_DAYS", 90, minimum=1)
# Coalescing window of live pushes: sub-second pages without a push per event.
LOCKSTEP_PUSH_INTERVAL = env_float("LOCKSTEP_PUSH_INTERVAL", 0.5, minimum=0.05)
# ---- analytics (docs/analytics.md) ------------------------------------------------------
SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
# The Parquet data set's location: a plain path is a local folder (relative paths are
# taken from LOCKSTEP_DATA_DIR); a URI with a scheme (file://, hdfs://, s3a://) is
# passed to Spark unchanged.
LOCKSTEP_ANALYTICS_URI = analytics_uri(
    env_str("LOCKSTEP_ANALYTICS_URI", "") or "analytics", LOCKSTEP_DATA_DIR
)
# A gap between two lag samples longer than this is not counted as time above the lag
# threshold: the sampler was not running, so nothing is known about it.
LOCKSTEP_ANALYTICS_MAX_SAMPLE_GAP_SECONDS = env_float(
    "LOCKSTEP_ANALYTICS_MAX_SAMPLE_GAP_SECONDS", 60.0, minimum=1.0
)
# Rows of each top list (most retried keys and error types) per topic and group.
LOCKSTEP_ANALYTICS_TOP_N = env_int("LOCKSTEP_ANALYTICS_TOP_N", 20, minimum=1)
# Spark options for the job's session (local[*] defaults; a cluster may want more).
LOCKSTEP_SPARK_SHUFFLE_PARTITIONS = env_int("LOCKSTEP_SPARK_SHUFFLE_PARTITIONS", 8, minimum=1)
LOCKSTEP_SPARK_DRIVER_MEMORY = env_str("LOCKSTEP_SPARK_DRIVER_MEMORY", "2g")
# More Spark options, "key=value,key=value".
LOCKSTEP_SPARK_CONF = spark_conf(env_str("LOCKSTEP_SPARK_CONF", ""))

# /metrics answers only requests with "Authorization: Bearer <this>" when set; in
# production it is required (without it /metrics answers 403 and says so).
LOCKSTEP_METRICS_TOKEN = env_str("LOCKSTEP_METRICS_TOKEN", "").strip()
# What /metrics shows per (topic, group, queue): "queue" (every queue's series, about
# 10 per pair) or "group" (per (topic, group) aggregates only, for fleets whose per-queue
# series a Prometheus should not store); deploy/prometheus/README.md, "Detail".
LOCKSTEP_METRICS_DETAIL = env_choice("LOCKSTEP_METRICS_DETAIL", "queue", ("queue", "group"))

# ---- alerts (docs/alerts.md) -------------------------------------------------------------
# How often the rules run over the live state; an alert is raised within about two ticks
# after its condition has held for its threshold.
LOCKSTEP_ALERT_EVAL_SECONDS = env_float("LOCKSTEP_ALERT_EVAL_SECONDS", 2.0, minimum=0.2)
# Rule defaults (overridable per topic and group on the alert rules page and in the admin).
# queue_stuck uses LOCKSTEP_STUCK_AFTER_SECONDS above.
LOCKSTEP_ALERT_BLOCKED_RETRIES = env_int("LOCKSTEP_ALERT_BLOCKED_RETRIES", 5, minimum=1)
LOCKSTEP_ALERT_HELD_AFTER_SECONDS = env_float("LOCKSTEP_ALERT_HELD_AFTER_SECONDS", 0.0, minimum=0.0)
LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS = env_float(
    "LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS", 30.0, minimum=0.0
)
# A consumer counts as lost after the heartbeat timeout at the earliest.
LOCKSTEP_ALERT_CONSUMER_LOST_SECONDS = env_float(
    "LOCKSTEP_ALERT_CONSUMER_LOST_SECONDS", 15.0, minimum=0.0
)
LOCKSTEP_ALERT_FLAPPING_CHANGES = env_int("LOCKSTEP_ALERT_FLAPPING_CHANGES", 6, minimum=2)
LOCKSTEP_ALERT_FLAPPING_WINDOW_SECONDS = env_float(
    "LOCKSTEP_ALERT_FLAPPING_WINDOW_SECONDS", 600.0, minimum=10.0
)
LOCKSTEP_ALERT_LAG_SECONDS = env_float("LOCKSTEP_ALERT_LAG_SECONDS", 300.0, minimum=1.0)
# Burrow's window: 10 samples of LOCKSTEP_LAG_SAMPLE_SECONDS (10 s) look at 100 s.
LOCKSTEP_ALERT_LAG_TREND_SAMPLES = env_int("LOCKSTEP_ALERT_LAG_TREND_SAMPLES", 10, minimum=3)
LOCKSTEP_ALERT_DLQ_GROWTH = env_int("LOCKSTEP_ALERT_DLQ_GROWTH", 10, minimum=0)
LOCKSTEP_ALERT_DLQ_WINDOW_SECONDS = env_float(
    "LOCKSTEP_ALERT_DLQ_WINDOW_SECONDS", 300.0, minimum=10.0
)
# Unacknowledged open alerts are told again this often.
LOCKSTEP_ALERT_RENOTIFY_SECONDS = env_float("LOCKSTEP_ALERT_RENOTIFY_SECONDS", 3600.0, minimum=1.0)
# Notifications go per (rule, topic, group), as Alertmanager's group_by (docs/alerts-delivery.md,
# "Grouping"): a new group waits this long for the rest of its storm before its first
# notification (Alertmanager's group_wait, 30 s), and a group already told waits this long
# before telling what changed (group_interval, 5 min). The repeat interval is
# LOCKSTEP_ALERT_RENOTIFY_SECONDS above.
LOCKSTEP_ALERT_GROUP_WAIT_SECONDS = env_float(
    "LOCKSTEP_ALERT_GROUP_WAIT_SECONDS", 30.0, minimum=0.0
)
LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS = env_float(
    "LOCKSTEP_ALERT_GROUP_INTERVAL_SECONDS", 300.0, minimum=0.0
)
# Links in notifications start with this (no trailing slash needed).
LOCKSTEP_BASE_URL = env_str("LOCKSTEP_BASE_URL", "http://127.0.0.1:8000")

# --- Alert delivery (docs/alerts-delivery.md) ---------------------------------------
# Imported here, not at the top, so this section stays one block (the parsers import no
# models: they are safe before the apps load).
from lockstep.dashboard.alerts.env_channels import parse_email_to, parse_webhooks  # noqa: E402

# EMAIL_URL names the mail server, e.g. smtp+tls://user:password@smtp.example.com:587;
# the default prints mails to the console (development).
vars().update(_env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env_str("LOCKSTEP_ALERT_EMAIL_FROM", "lockstep@localhost")
# Channels declared as code (rows with from_env=True, mirrored by the dispatcher at start):
# addresses of an "env-email" channel, and webhooks "env-webhook-1", ... in list order.
LOCKSTEP_ALERT_EMAIL_TO = parse_email_to(env_str("LOCKSTEP_ALERT_EMAIL_TO", ""))
LOCKSTEP_ALERT_WEBHOOKS = parse_webhooks(env_str("LOCKSTEP_ALERT_WEBHOOKS", ""))
# 6 attempts with doubling backoff from 2 s span about a minute: a receiver restarting
# or a brief network cut is ridden out; a receiver down for longer gets a failed delivery
# (visible on the alert) rather than a notification that arrives when it no longer matters.
LOCKSTEP_ALERT_DELIVERY_ATTEMPTS = env_int("LOCKSTEP_ALERT_DELIVERY_ATTEMPTS", 6, minimum=1)
LOCKSTEP_ALERT_RETRY_SECONDS = env_float("LOCKSTEP_ALERT_RETRY_SECONDS", 2.0, minimum=0.1)
# One slow receiver holds up the dispatcher's other deliveries for at most this long.
LOCKSTEP_ALERT_SEND_TIMEOUT_SECONDS = env_float(
    "LOCKSTEP_ALERT_SEND_TIMEOUT_SECONDS", 5.0, minimum=0.5
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Passwords in URLs (REDIS_URL, EMAIL_URL, webhooks) never reach the log, whichever
    # library formatted them into a message or a traceback.
    "filters": {
        "mask_urls": {"()": "lockstep.workers.redact.MaskUrlsFilter"},
        # Celery's INFO lines for every run of the tasks beat sends every few seconds go
        # to DEBUG: nobody acts on them, and they buried the rest (dashboard/task_log.py).
        "frequent_tasks_at_debug": {
            "()": "lockstep.dashboard.task_log.FrequentTasksAtDebug",
            "tasks": frequent_tasks(CELERY_BEAT_SCHEDULE),
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["mask_urls"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {name: {"filters": ["frequent_tasks_at_debug"]} for name in CELERY_TASK_LOGGERS},
}
