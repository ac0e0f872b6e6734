"""What any stored text must be, whichever app stores it."""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

NUL_CHARACTER = _("Must not contain NUL characters.")
NOT_UNICODE = _("Must be valid Unicode text (no lone surrogate).")
# JSON nested deeper than the decoder's recursion limit, whether a parser or the import reads it.
JSON_TOO_DEEP = _("Invalid JSON: nested too deeply.")


def text_error(text: str) -> str | Promise | None:
    """What makes ``text`` impossible to store as it is, if anything: PostgreSQL text holds neither NUL
    nor a lone surrogate (which JSON's \\ud800 escapes can carry)."""
    if "\x00" in text:
        return NUL_CHARACTER
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return NOT_UNICODE
    return None
