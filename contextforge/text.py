"""What any stored text must be, whichever app stores it."""

from __future__ import annotations

import unicodedata

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

NUL_CHARACTER = _("Must not contain NUL characters.")
NOT_UNICODE = _("Must be valid Unicode text (no lone surrogate).")
# JSON nested deeper than the decoder's recursion limit, whether a parser or the import reads it.
JSON_TOO_DEEP = _("Invalid JSON: nested too deeply.")
BIDI_CONTROL = _(
    "Must not contain bidirectional override or isolate characters (U+202A–U+202E, U+2066–U+2069)."
)
NONCHARACTER = _("Must not contain Unicode noncharacters (such as U+FFFF).")
# The embeddings, overrides and isolates that reorder how text is shown ("Trojan Source",
# CVE-2021-42574): a title or tag that holds one can read as something it is not.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


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


def is_noncharacter(char: str) -> bool:
    code = ord(char)
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def spoofing_error(text: str) -> str | None:
    """What makes ``text`` unfit for a name people read and trust (a title, a tag), if anything: a
    bidirectional override or isolate, or a noncharacter."""
    if any(char in BIDI_CONTROLS for char in text):
        return str(BIDI_CONTROL)
    if any(is_noncharacter(char) for char in text):
        return str(NONCHARACTER)
    return None


def without_format_characters(text: str) -> str:
    """``text`` in NFKC form without its invisible format characters (category Cf: zero-width spaces
    and joiners, a byte-order mark, a soft hyphen), except the bidirectional controls, which are kept
    for spoofing_error to refuse rather than silently dropped."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if c in BIDI_CONTROLS or unicodedata.category(c) != "Cf")
