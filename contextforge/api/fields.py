"""Input fields that several apps' serializers share."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from contextforge.text import text_error

NOT_A_STRING = _("Must be a string.")
TAGS_FIELD_HELP = "Tags; an item tagged 'test' is left out of searches unless the search asks for 'test'."


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text, and text that
    PostgreSQL cannot store."""

    default_error_messages = {"invalid": NOT_A_STRING}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if error := text_error(data):
            raise serializers.ValidationError(str(error))
        return super().to_internal_value(data)


def tags_field(**kwargs) -> serializers.ListField:
    """A list of tags, each a non-blank string, within the settings' limits."""
    return serializers.ListField(
        child=StrictCharField(max_length=settings.CONTEXTFORGE_MAX_TAG_LENGTH, allow_blank=False),
        max_length=settings.CONTEXTFORGE_MAX_TAGS,
        help_text=TAGS_FIELD_HELP,
        **kwargs,
    )
