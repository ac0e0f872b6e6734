"""Reading a request's query parameters: the one strict reader of a boolean, and of a choice."""

from __future__ import annotations

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
