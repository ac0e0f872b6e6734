from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils.translation import gettext_lazy as _

from accounts.models import DEFAULT_TASK_PREFIX, Project, Role, Scope
from accounts.services import INVITATION_DAYS, INVITATION_MAX_DAYS

SCOPE_NOT_ALLOWED = _("Your role allows only these scopes: {scopes}.")


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
    is_agent = forms.BooleanField(
        label=_("An agent's key"),
        required=False,
        help_text=_(
            "What an agent writes with it arrives unreviewed, for a person to approve in the review inbox."
        ),
    )

    def __init__(self, *args, projects=None, allowed_scopes=None, scopes_for=None, **kwargs):
        """``allowed_scopes``: the scopes offered; ``scopes_for(project)``: those the owner's role allows
        for a key bound to ``project`` (or to none), checked when the form is posted."""
        super().__init__(*args, **kwargs)
        if projects is not None:
            self.fields["project"].queryset = projects
        if allowed_scopes is not None:
            self.fields["scopes"].choices = [c for c in Scope.choices if c[0] in allowed_scopes]
        self.scopes_for = scopes_for

    def clean(self):
        cleaned = super().clean()
        if self.scopes_for is not None and cleaned.get("scopes"):
            allowed = self.scopes_for(cleaned.get("project"))
            if not set(cleaned["scopes"]) <= set(allowed):
                self.add_error("scopes", SCOPE_NOT_ALLOWED.format(scopes=", ".join(allowed) or "—"))
        return cleaned


class ProjectForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    task_prefix = forms.CharField(
        label=_("Task-id prefix"),
        max_length=10,
        initial=DEFAULT_TASK_PREFIX,
        help_text=_("AUTH gives task ids like AUTH-12."),
    )
    description = forms.CharField(
        label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 4})
    )


class MemberAddForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150)
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.MEMBER)


class InvitationForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.MEMBER)
    days = forms.IntegerField(
        label=_("Valid for (days)"), min_value=1, max_value=INVITATION_MAX_DAYS, initial=INVITATION_DAYS
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices)


class SignUpForm(UserCreationForm):
    """A new account, made to accept an invitation."""
