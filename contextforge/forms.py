"""Form helpers shared by the apps' pages."""

from __future__ import annotations

from django.core.exceptions import ValidationError


def apply_errors(form, exc: ValidationError) -> None:
    """Show a service's ValidationError on ``form``: each message on the field it names, or on the form
    as a whole when the form has no such field."""
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)
