"""The API plumbing every app shares, under public names: the domain error (``exceptions``), the
exception handler and error pages (``errors``), input fields (``fields``), body parsers (``parsers``),
input validation (``validation``) and pagination (``pagination``). What a request's key may reach is
the accounts app's (``accounts.access``)."""

from __future__ import annotations

from contextforge.api.errors import handler400, handler404, handler500
from contextforge.api.exceptions import ApplicationError

__all__ = ["ApplicationError", "handler400", "handler404", "handler500"]
