"""Settings: every production value comes from the environment (SPEC §8).

Every default is embedded and safe for a laptop: with nothing set the app
runs on a SQLite file under ``var/`` and an embedded Celery broker (kombu's
filesystem transport under ``var/broker``) that needs no server.
"""

from pathlib import Path
import ipaddress
import os

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("COMPACTION_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_number(name: str, default, kind, what: str):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return kind(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {what}, got {value!r}") from exc


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


DEBUG = env_bool("DJANGO_DEBUG", False)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG:
        # Only a debug instance may run on a throwaway key.
        SECRET_KEY = "insecure-debug-only-key-do-not-use-in-production"
    else:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it, or set DJANGO_DEBUG=1 for a local instance."
        )

ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get(
        "DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else ""
    ).split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_filters",
    "django_htmx",
    "template_partials",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "conversations",
    "compaction",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "compaction.config.urls"
WSGI_APPLICATION = "compaction.config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # The desk's filters and tags (compaction/desk/templatetags.py).
            "libraries": {"desk": "compaction.desk.templatetags"},
        },
    },
]

# --- Database -------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Kept connections are checked before a request reuses them, so a
    # database restart costs no request a 500 (issue 12).
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "compaction.sqlite3",
            "OPTIONS": {
                # WAL lets the web server read while a worker writes; the busy
                # timeout makes writers queue instead of failing at once.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")

# Django's four validators (createsuperuser, grant_access --password, the admin).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve from the finder in development so a fresh clone needs no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", not DEBUG and bool(CSRF_TRUSTED_ORIGINS))
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# --- Production: HTTPS behind a proxy (README: Deploying) -----------------
# Each is off unless set: a laptop serves plain HTTP on 127.0.0.1.
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
# /metrics may be scraped over plain HTTP inside the network (it has its own guard).
SECURE_REDIRECT_EXEMPT = [r"^metrics$"]


def _proxy_ssl_header(value: str):
    """``HTTP_X_FORWARDED_PROTO,https``: the header (as Django names it in
    META) and the value the proxy sets on HTTPS requests."""
    if not value:
        return None
    header, sep, proto = (part.strip() for part in value.partition(","))
    if not sep or not header.startswith("HTTP_") or not proto:
        raise ImproperlyConfigured(
            f"DJANGO_SECURE_PROXY_SSL_HEADER must look like 'HTTP_X_FORWARDED_PROTO,https', got {value!r}")
    return (header, proto)


SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER", ""))
# How many proxies in front append to X-Forwarded-For; 0 = use REMOTE_ADDR.
# The address sign-in throttling counts by (compaction/signin.py).
DJANGO_FORWARDED_FOR_PROXIES = env_int("DJANGO_FORWARDED_FOR_PROXIES", 0)

# Content-Security-Policy (django-csp): scripts and styles only from our own
# static files; no inline script anywhere (htmx is told not to evaluate any,
# templates/base.html). Style attributes stay allowed: the desk sizes its
# state bars with them. The API docs widen style-src for their own pages only
# (compaction/api/docs.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# --- Sign-in throttling (django-axes; README: Sign-in lockout) ------------
# A sign-in is refused (429) after AXES_FAILURE_LIMIT wrong passwords for one
# account, or from one address, until AXES_COOLOFF_TIME hours have passed or
# an operator lifts it (`manage.py axes_reset_username NAME`, `axes_reset_ip
# ADDRESS`, `axes_reset`). Failures are counted in the database: every web
# process sees the same count.
AUTHENTICATION_BACKENDS = [
    "compaction.signin.SignInLockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("COMPACTION_SIGNIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_float("COMPACTION_SIGNIN_COOLOFF_HOURS", 1.0) or None
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "compaction.signin.client_address"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

# --- Cache: shared by every process (the REST write throttle) -------------
# Redis when configured, else a table in the application's database
# (created by `migrate`, compaction/apps.py), never one process's memory.
CACHE_URL = os.environ.get("CACHE_URL", "") or os.environ.get("REDIS_URL", "")
if CACHE_URL:
    if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL, got {CACHE_URL!r}")
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
                          "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "compaction")}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache",
                          "LOCATION": "compaction_cache"}}

# --- REST -----------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "compaction.api.auth.ScopedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "compaction.api.plumbing.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Compaction Desk API",
    "DESCRIPTION": "Ingest conversations, read pairs and segments, pull projections and audits.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Named choice sets (a finding's ``kind`` is not a job's ``kind``).
    "ENUM_NAME_OVERRIDES": {
        "DriftKindEnum": "compaction.models.drift.DriftKind",
        "DriftCodeEnum": "compaction.models.drift.DriftCode",
        "BindingKindEnum": [("segment", "segment"), ("handoff", "handoff")],
    },
    # Swagger UI and ReDoc from our own static files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No badge from the online validator: the docs load nothing from elsewhere.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # Bounds the serializers cannot declare (compaction/api/schema.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "compaction.api.schema.state_every_bound"],
}

# REST writes (re-run, grant, compact, review) per user; "N/second|minute|hour|day", empty = no limit.
COMPACTION_API_WRITE_RATE = os.environ.get("COMPACTION_API_WRITE_RATE", "120/minute")
# Jobs read per chunk by the streaming audit export (one server-side cursor fetch).
COMPACTION_API_EXPORT_CHUNK = env_int("COMPACTION_API_EXPORT_CHUNK", 500)
# On PostgreSQL the JSONL and CSV exports are built by the database (COPY,
# issue 17); off, they are built in Python as on SQLite (the same bytes, slower).
COMPACTION_AUDIT_EXPORT_IN_SQL = env_bool("COMPACTION_AUDIT_EXPORT_IN_SQL", True)
# Two database connections build an export's records, alternate rows each,
# from one shared snapshot (off: one connection builds them all).
COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS = env_bool("COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS", True)

# --- Ingest limits (SPEC §3) ----------------------------------------------
INGEST_MAX_CONTENT_BYTES = env_int("INGEST_MAX_CONTENT_BYTES", 1024 * 1024)
INGEST_MAX_DOCUMENT_BYTES = env_int("INGEST_MAX_DOCUMENT_BYTES", 32 * 1024 * 1024)
INGEST_MAX_MESSAGES = env_int("INGEST_MAX_MESSAGES", 100_000)
# One tool call's ``arguments`` (UTF-8 bytes of its JSON text) and one
# ``metadata`` object (of the document, a run or a message, as compact JSON).
INGEST_MAX_TOOL_ARGUMENTS_BYTES = env_int("INGEST_MAX_TOOL_ARGUMENTS_BYTES", 64 * 1024)
INGEST_MAX_METADATA_BYTES = env_int("INGEST_MAX_METADATA_BYTES", 64 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = INGEST_MAX_DOCUMENT_BYTES + 1024

# --- Compaction (SPEC §5) -------------------------------------------------
COMPACTION_PROVIDER = os.environ.get("COMPACTION_PROVIDER", "extractive")
COMPACTION_MODEL = os.environ.get("COMPACTION_MODEL", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_TIMEOUT_SECONDS = env_float("OPENAI_TIMEOUT_SECONDS", 60.0)
COMPACTION_MAX_ATTEMPTS = env_int("COMPACTION_MAX_ATTEMPTS", 2)
COMPACTION_LEASE_SECONDS = env_int("COMPACTION_LEASE_SECONDS", 300)
COMPACTION_RAW_OUTPUT_CAP = env_int("COMPACTION_RAW_OUTPUT_CAP", 64 * 1024)
# Admission: concurrent model calls per worker process and across all workers.
COMPACTION_LOCAL_CONCURRENCY = env_int("COMPACTION_LOCAL_CONCURRENCY", 4)
COMPACTION_GLOBAL_CONCURRENCY = env_int("COMPACTION_GLOBAL_CONCURRENCY", 8)
# Fault injection (documented in the README): wraps any provider.
COMPACTION_FAULT_RATE = env_float("COMPACTION_FAULT_RATE", 0.0)
COMPACTION_FAULT_KIND = os.environ.get("COMPACTION_FAULT_KIND", "")

# --- Celery ---------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("in", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "in"),
        "data_folder_out": str(BROKER_DIR / "in"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        # Broadcast/fanout state (worker control) too, or kombu writes ./control.
        "control_folder": str(BROKER_DIR / "control"),
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 150)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 180)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"},
                # django-axes logs every sign-in at INFO; lockouts are WARNING.
                "axes": {"level": "WARNING"}},
}

# --- /metrics (README: Observability) -------------------------------------
# A scrape must send ``Authorization: Bearer <token>`` or come from an
# address in the allow-list (comma-separated addresses or networks, the
# loopback by default with DEBUG, else none); anyone else gets 403.
COMPACTION_METRICS_TOKEN = os.environ.get("COMPACTION_METRICS_TOKEN", "")
COMPACTION_METRICS_ALLOW = [
    a.strip() for a in os.environ.get("COMPACTION_METRICS_ALLOW", "127.0.0.1,::1" if DEBUG else "").split(",")
    if a.strip()
]
for _network in COMPACTION_METRICS_ALLOW:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as exc:
        raise ImproperlyConfigured(f"COMPACTION_METRICS_ALLOW: {_network!r} is no address or network") from exc
# The database gauges (jobs by state) are read at most once per this many seconds.
COMPACTION_METRICS_CACHE_SECONDS = env_float("COMPACTION_METRICS_CACHE_SECONDS", 15.0)

# --- Projection (SPEC §6) ---------------------------------------------------
# Budgets above these are refused as absurd (400), not silently clamped.
PROJECTION_MAX_BUDGET_BYTES = env_int("PROJECTION_MAX_BUDGET_BYTES", 16 * 1024 * 1024)
PROJECTION_MAX_BUDGET_TOKENS = env_int("PROJECTION_MAX_BUDGET_TOKENS", 4_000_000)

# --- Context assembly (SPEC §9, §10) ----------------------------------------
# POST /api/v1/context/assemble: the same kind of limits as ingest (SPEC §3).
CONTEXT_ASSEMBLE_MAX_BODY_BYTES = env_int("CONTEXT_ASSEMBLE_MAX_BODY_BYTES", INGEST_MAX_DOCUMENT_BYTES)
CONTEXT_ASSEMBLE_MAX_MESSAGES = env_int("CONTEXT_ASSEMBLE_MAX_MESSAGES", INGEST_MAX_MESSAGES)
CONTEXT_ASSEMBLE_MAX_MESSAGE_BYTES = env_int("CONTEXT_ASSEMBLE_MAX_MESSAGE_BYTES", INGEST_MAX_CONTENT_BYTES)
# A model input limit above this is refused as absurd (400), like projection budgets.
CONTEXT_ASSEMBLE_MAX_INPUT_LIMIT = env_int("CONTEXT_ASSEMBLE_MAX_INPUT_LIMIT", 10_000_000)

# --- Compaction engine (issue 3) ------------------------------------------
# How long a job waits for an admission slot before it is put back (unclaimed).
COMPACTION_ADMISSION_WAIT_SECONDS = env_float("COMPACTION_ADMISSION_WAIT_SECONDS", 30.0)
# A failed attempt with attempts left is retried by the periodic scanner once
# this long has passed (or at once by `compact --retry-now`).
COMPACTION_RETRY_DELAY_SECONDS = env_int("COMPACTION_RETRY_DELAY_SECONDS", 60)
COMPACTION_SCAN_INTERVAL_SECONDS = env_float("COMPACTION_SCAN_INTERVAL_SECONDS", 15.0)
# Plan and enqueue jobs after every ingest that changes a conversation.
COMPACTION_AUTO_PLAN = env_bool("COMPACTION_AUTO_PLAN", True)

# --- Compaction engine: outages and the maintenance queue (issue 12) ------
from kombu import Exchange as _Exchange, Queue as _Queue  # noqa: E402

# A write that must survive a database outage (an attempt's end) retries
# with a pause doubling from FIRST to MAX seconds (compaction/engine/outages.py).
COMPACTION_OUTAGE_BACKOFF_FIRST_SECONDS = env_float("COMPACTION_OUTAGE_BACKOFF_FIRST_SECONDS", 0.25)
COMPACTION_OUTAGE_BACKOFF_MAX_SECONDS = env_float("COMPACTION_OUTAGE_BACKOFF_MAX_SECONDS", 5.0)
# Recovery (the scan) and attempts handed on during an outage have their own
# queue, so they never wait behind the job backlog; a worker must consume it
# (README: Running a worker). Workers that do also send the scan themselves.
COMPACTION_MAINTENANCE_QUEUE = os.environ.get("COMPACTION_MAINTENANCE_QUEUE", "maintenance")
CELERY_TASK_ROUTES = {
    "compaction.reap_and_scan": {"queue": COMPACTION_MAINTENANCE_QUEUE},
    "compaction.settle_attempt": {"queue": COMPACTION_MAINTENANCE_QUEUE},
}
# Both queues declared, so a worker started without -Q consumes both.
CELERY_TASK_QUEUES = tuple(
    _Queue(name, _Exchange(name), routing_key=name)
    for name in dict.fromkeys((CELERY_TASK_DEFAULT_QUEUE, COMPACTION_MAINTENANCE_QUEUE))
)
# A worker started while the broker is away waits for it instead of exiting.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Never cancel a running attempt when the broker connection drops: its model
# call and its record need only the database; the message it cannot
# acknowledge any more is delivered again and finds the attempt made.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
