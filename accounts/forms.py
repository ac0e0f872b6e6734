from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Project, Scope


class ApiKeyForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        required=False,
        label=_("Project"),
        empty_label=_("All my projects"),
    )
    scopes = forms.MultipleChoiceField(
        label=_("Scopes"), choices=Scope.choices, widget=forms.CheckboxSelectMultiple, initial=[Scope.READ]
    )

    def __init__(self, *args, projects=None, **kwargs):
        super().__init__(*args, **kwargs)
        if projects is not None:
            self.fields["project"].queryset = projects
