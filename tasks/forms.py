from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from accounts.models import Project
from knowledge.forms import TagsField
from tasks.models import Priority, Status


class TaskForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), label=_("Project"))
    title = forms.CharField(label=_("Title"), max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    description = forms.CharField(
        label=_("Description"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
    )
    status = forms.ChoiceField(label=_("Status"), choices=Status.choices, initial=Status.PENDING)
    priority = forms.ChoiceField(label=_("Priority"), choices=Priority.choices, initial=Priority.MEDIUM)
    assignee = forms.ModelChoiceField(
        label=_("Assignee"), queryset=get_user_model().objects.none(), required=False, empty_label=_("nobody")
    )
    due_date = forms.DateField(
        label=_("Due date"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    tags = TagsField(label=_("Tags"), required=False, help_text=_("Separated by spaces or commas."))

    def __init__(
        self, *args, projects=None, members=None, editing: bool = False, quick: bool = False, **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects if projects is not None else Project.objects.none()
        self.fields["assignee"].queryset = members if members is not None else get_user_model().objects.none()
        if editing:
            del self.fields["project"]
        elif projects is not None and projects.count() == 1:
            self.fields["project"].initial = projects.first()
            self.fields["project"].widget = forms.HiddenInput()
        if quick:  # the board's one-line form: what a card shows, the rest on the task's page
            for name in ("description", "status", "tags"):
                del self.fields[name]


class BoardFilterForm(forms.Form):
    assignee = forms.ModelChoiceField(
        label=_("Assignee"),
        queryset=get_user_model().objects.none(),
        required=False,
        empty_label=_("anyone"),
        to_field_name="username",
    )
    priority = forms.ChoiceField(label=_("Priority"), required=False, choices=[("", _("any priority"))])
    tag = forms.ChoiceField(label=_("Tag"), required=False, choices=[("", _("any tag"))])

    def __init__(self, *args, members=None, tags=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assignee"].queryset = members if members is not None else get_user_model().objects.none()
        self.fields["priority"].choices += Priority.choices
        self.fields["tag"].choices += [(tag, tag) for tag in tags]

    def filters(self) -> dict:
        if not self.is_valid():
            return {}
        return {name: value for name, value in self.cleaned_data.items() if value}


class CommentForm(forms.Form):
    text = forms.CharField(
        label=_("Comment"),
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
    )
