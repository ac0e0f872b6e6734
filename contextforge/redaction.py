"""Secrets never reach a log line: API keys, invitation tokens, single sign-on's authorization codes and
credential-named query parameters are cut out of every URL that the web server's access log and Django's
request log write."""

from __future__ import annotations

import logging
import re

# An API key (accounts' SECRET_PREFIX, then its random part): the part a key list shows is kept so that
# a line can still be matched to a key, the rest is cut.
KEY = re.compile(r"(cf_live_[A-Za-z0-9_-]{6})[A-Za-z0-9_-]+")
# A query parameter whose name says it carries a secret, whatever its value looks like.
SECRET_PARAMETER = re.compile(
    r"([?&;](?:[A-Za-z0-9_.-]*?)(?:key|token|secret|password|passwd|signature|credential)"
    r"[A-Za-z0-9_.-]*=)[^&;#\s\"']*",
    re.IGNORECASE,
)
# An invitation link's one-time token.
INVITATION = re.compile(r"(/projects/join/)[^/?#\s\"']+")
# The authorization code an OpenID Connect provider sends the browser back with (accounts.views).
OIDC_CODE = re.compile(r"(/oidc/callback/\?(?:[^#\s\"']*?[&;])?code=)[^&;#\s\"']*")
REDACTED = "[redacted]"
# The loggers that write request URLs: uvicorn's and gunicorn's access logs, Django's request log and
# runserver's.
URL_LOGGERS = ("uvicorn.access", "gunicorn.access", "django.request", "django.server")


def redact(text: str) -> str:
    text = KEY.sub(rf"\1{REDACTED}", text)
    text = SECRET_PARAMETER.sub(rf"\1{REDACTED}", text)
    text = OIDC_CODE.sub(rf"\1{REDACTED}", text)
    return INVITATION.sub(rf"\1{REDACTED}", text)


class RedactSecrets(logging.Filter):
    """Cuts the secrets out of a record's message and arguments; the record is always kept. Arguments
    keep their places (uvicorn's access formatter reads them by position)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


def install() -> None:
    """Attach the filter to every logger that writes URLs (idempotent)."""
    for name in URL_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
