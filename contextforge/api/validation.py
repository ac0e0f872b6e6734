"""Validating a request's input: a JSON object, its fields declared by the serializer."""

from __future__ import annotations

import functools
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


@functools.cache
def validator(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    """One instance of ``serializer_class`` per process, its fields built once, that validates every body.

    A serializer deep-copies its declared fields and binds them on every instantiation: ~0.1 ms for the
    search's input, two thirds of its validation. ``run_validation`` keeps no state on the instance (unlike
    ``is_valid``), so the instance is shared by every request and thread; the input serializers read no
    context, instance or initial data. Error messages are still made per call, in the request's language.
    """
    serializer = serializer_class()
    shared_defaults_refused(serializer)  # also builds the fields now, not in two threads at once later
    return serializer


def shared_defaults_refused(serializer: serializers.Serializer) -> None:
    """A field whose default is a list, dict or set would hand the same object to every request: refused
    (give a callable such as ``default=list``)."""
    for name, field in serializer.fields.items():
        if isinstance(field.default, list | dict | set):
            raise TypeError(f"{type(serializer).__name__}.{name}: a shared mutable default; use a callable")
        for inner in (field, getattr(field, "child", None)):
            if isinstance(inner, serializers.Serializer):
                shared_defaults_refused(inner)


def validated(serializer_class: type[serializers.Serializer], data) -> dict:
    """``data`` checked by ``serializer_class``: its validated data, or a 400 naming each bad field
    (what ``serializer_class(data=data).is_valid(raise_exception=True)`` answers)."""
    if not isinstance(data, Mapping):
        raise ApplicationError(NOT_AN_OBJECT, field="body")
    try:
        return validator(serializer_class).run_validation(data)
    except serializers.ValidationError as exc:
        raise serializers.ValidationError(exc.detail) from None
