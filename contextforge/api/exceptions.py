"""The one domain error the API turns into a JSON answer (errors.exception_handler)."""

from __future__ import annotations

from django.utils.functional import Promise


class ApplicationError(Exception):
    """A domain error with a message meant for the caller, and optionally the field it concerns."""

    def __init__(self, message: str | Promise, *, field: str | None = None, status_code: int = 400):
        # Translated now, in the language of the request that raised it (a constant may be lazy).
        message = str(message)
        super().__init__(message)
        self.message = message
        self.field = field
        self.status_code = status_code
