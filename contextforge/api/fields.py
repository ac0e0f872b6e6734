"""Input fields that several apps' serializers share."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from contextforge.text import spoofing_error, text_error

NOT_A_STRING = _("Must be a string.")
TAGS_FIELD_HELP = "Tags; an item tagged 'test' is left out of searches unless the search asks for 'test'."


# What the schema says such text may hold (contextforge/api/schema.py adds it as a ``pattern``).
NO_NUL_PATTERN = "^[^\\u0000]*$"
NAME_PATTERN = "^[^\\u0000\\u202a-\\u202e\\u2066-\\u2069\\ufdd0-\\ufdef\\ufffe\\uffff]*$"


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text, and text that
    PostgreSQL cannot store."""

    default_error_messages = {"invalid": NOT_A_STRING}
    schema_pattern: str | None = NO_NUL_PATTERN

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if error := text_error(data):
            raise serializers.ValidationError(str(error))
        return super().to_internal_value(data)


class NameField(StrictCharField):
    """A StrictCharField for what people read as a name (a title, a tag): no bidirectional override or
    isolate and no noncharacter either (contextforge.text.spoofing_error)."""

    schema_pattern = NAME_PATTERN

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if error := spoofing_error(value):
            raise serializers.ValidationError(error)
        return value


def tags_field(**kwargs) -> serializers.ListField:
    """A list of tags, each a non-blank string, within the settings' limits."""
    return serializers.ListField(
        child=NameField(max_length=settings.CONTEXTFORGE_MAX_TAG_LENGTH, allow_blank=False),
        max_length=settings.CONTEXTFORGE_MAX_TAGS,
        help_text=TAGS_FIELD_HELP,
        **kwargs,
    )
