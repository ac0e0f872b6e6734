from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _


class RepositoryForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    url = forms.CharField(
        label=_("URL or path"),
        max_length=1000,
        help_text=_("https://, ssh://, git@host:path, or a local path under the allowed roots."),
    )
    branch = forms.CharField(label=_("Branch"), max_length=200, required=False, help_text=_("Default: HEAD."))
    credential = forms.CharField(
        label=_("Credential"),
        max_length=1000,
        required=False,
        widget=forms.PasswordInput,
        help_text=_("user:token or a token for an https remote; never shown back."),
    )


class KnowledgeSourceForm(forms.Form):
    path = forms.CharField(
        label=_("Path"),
        max_length=1000,
        help_text=_(
            "A file (CLAUDE.md) or a folder ending in / (docs/adr/): each sync imports what changed in it."
        ),
    )
