"""Reading a request's query parameters: the one strict reader of a boolean, and of a choice."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.utils.translation import gettext_lazy as _

from contextforge.api.exceptions import ApplicationError

FLAG_INVALID = _("Must be true or false (1 or 0).")
CHOICE_INVALID = _("Not a {field}: choose one of {choices}.")
TRUE_VALUES = frozenset({"true", "1", "yes", "on"})
FALSE_VALUES = frozenset({"false", "0", "no", "off"})


def query_flag(request, name: str, *, default: bool = False) -> bool:
    """The boolean query parameter ``name``; ``default`` when it is absent. An empty or any other value
    is a 400 naming it: ``?dry_run=`` or ``?dry_run=nope`` must never run a restore or an import for
    real. Every query boolean of the API is read here."""
    if name not in request.query_params:
        return default
    value = request.query_params.get(name, "").strip().lower()
    if value in TRUE_VALUES:
        return True
    if value in FALSE_VALUES:
        return False
    raise ApplicationError(FLAG_INVALID, field=name)


def query_choice(request, name: str, choices, *, required: bool = False) -> str | None:
    """The query parameter ``name``, one of ``choices``; None when absent (and not ``required``). An empty
    or any other value is a 400 naming it."""
    if name not in request.query_params and not required:
        return None
    value = request.query_params.get(name, "")
    if value not in choices:
        raise ApplicationError(CHOICE_INVALID.format(field=name, choices=", ".join(choices)), field=name)
    return value


SINCE_INVALID = _(
    "Not a time: give an ISO 8601 date or date-time (2026-12-01, 2026-12-01T09:30:00Z) or an age such as "
    "90m, 12h, 3d or 2w."
)
# What a ``since`` may be, as the API's schema says it: an age, or an ISO 8601 date or date-time.
SINCE_PATTERN = r"^(\d{1,6}[mhdw]|\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?)$"
AGE = re.compile(r"(\d{1,6})([mhdw])")
AGE_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# Anything earlier means "everything": what PostgreSQL and Python both hold.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)


def parse_since(value: str, *, now: datetime, field: str = "since") -> datetime:
    """A point in time given as an ISO 8601 date or date-time (without a zone: UTC) or as an age before
    ``now`` (``90m``, ``12h``, ``3d``, ``2w``), no earlier than EARLIEST; an ApplicationError naming
    ``field`` otherwise (a date that names no day, 2026-02-30, too)."""
    text = value if isinstance(value, str) else ""
    if not re.fullmatch(SINCE_PATTERN, text):
        raise ApplicationError(SINCE_INVALID, field=field)
    try:
        if match := AGE.fullmatch(text):
            when = now - timedelta(**{AGE_UNITS[match.group(2)]: int(match.group(1))})
        else:
            when = datetime.fromisoformat(text)
            when = when if when.tzinfo else when.replace(tzinfo=UTC)
        return max(when, EARLIEST)
    except OverflowError:  # an age or a zone that reaches before the year 1
        return EARLIEST
    except ValueError:
        raise ApplicationError(SINCE_INVALID, field=field) from None


INT_INVALID = _("Must be a whole number from {low} to {high}.")


def query_int(request, name: str, *, default: int, low: int, high: int) -> int:
    """The whole-number query parameter ``name`` within [low, high]; ``default`` when absent; anything
    else a 400 naming it."""
    if name not in request.query_params:
        return default
    value = request.query_params.get(name, "").strip()
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
        raise ApplicationError(INT_INVALID.format(low=low, high=high), field=name)
    return int(value)
