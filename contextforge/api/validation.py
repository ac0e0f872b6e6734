"""Validating a request's input: a JSON object, its fields declared by the serializer."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from contextforge.api.exceptions import ApplicationError

NOT_AN_OBJECT = _("The body must be a JSON object.")
UNKNOWN_FIELD = _("Unknown field.")


class InputSerializer(serializers.Serializer):
    """Refuses every field it does not declare, naming each: a misspelt field is an error, not a no-op."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = [name for name in data if name not in writable]
            if unknown:
                raise serializers.ValidationError({name: [UNKNOWN_FIELD] for name in unknown})
        return super().to_internal_value(data)


def validated(serializer_class: type[serializers.Serializer], data) -> dict:
    """``data`` checked by ``serializer_class``: its validated data, or a 400 naming each bad field."""
    if not isinstance(data, Mapping):
        raise ApplicationError(NOT_AN_OBJECT, field="body")
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
