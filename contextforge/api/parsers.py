"""Body parsers that never read more than their limit, and answer bad JSON with a 400."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, parsers

from contextforge.api.exceptions import ApplicationError
from contextforge.text import JSON_TOO_DEEP

BODY_TOO_LARGE = _("The body is larger than {max} bytes.")


def read_at_most(stream, limit: int) -> bytes:
    """The whole body, or a 413 as soon as it holds more than ``limit`` bytes (the rest is never read)."""
    body = stream.read(limit + 1) if stream is not None else b""
    if len(body) > limit:
        raise ApplicationError(BODY_TOO_LARGE.format(max=limit), field="body", status_code=413)
    return body


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser (which reads the body through Django, within DATA_UPLOAD_MAX_MEMORY_SIZE), with
    nesting deeper than the decoder's recursion limit a 400 like any other malformed JSON."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(JSON_TOO_DEEP) from None


class RawBodyParser(parsers.BaseParser):
    """Hands the view the raw bytes of any body, up to ``max_bytes()``."""

    media_type = "*/*"

    def max_bytes(self) -> int:
        return settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    # The raw body, as bytes: the view checks a signature over exactly these (DRF's stubs expect a mapping).
    def parse(self, stream, media_type=None, parser_context=None) -> bytes:  # type: ignore[override]
        return read_at_most(stream, self.max_bytes())
