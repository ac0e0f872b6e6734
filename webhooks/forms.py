from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from webhooks.models import SUBSCRIBABLE, Event, PayloadFormat


class WebhookForm(forms.Form):
    url = forms.CharField(
        label=_("URL"),
        max_length=2000,
        help_text=_(
            "Where the events are posted: an http(s) URL on a public address. Redirects are not followed."
        ),
    )
    events = forms.MultipleChoiceField(
        label=_("Events"),
        choices=[(event.value, event.label) for event in SUBSCRIBABLE],
        widget=forms.CheckboxSelectMultiple,
    )
    payload_format = forms.ChoiceField(
        label=_("Payload"), choices=PayloadFormat.choices, initial=PayloadFormat.JSON
    )
    description = forms.CharField(label=_("Description"), max_length=200, required=False)
    active = forms.BooleanField(label=_("Active"), required=False, initial=True)


def event_label(event: str) -> str:
    return str(Event(event).label) if event in Event.values else event
