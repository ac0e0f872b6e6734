from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.models import Project
from contextforge.history import CHANNELS
from knowledge.importers import FORMATS
from knowledge.importers.exports import EXPORT_FORMATS
from knowledge.models import IN, OUT, RELATION_LABELS, RelationKind, parse_tags
from knowledge.services import FILE_TOO_LARGE
from knowledge.spaces import SPACE_MAX_LENGTH


class TagsField(forms.CharField):
    """Tags typed as words separated by commas or spaces (knowledge.models.parse_tags)."""

    def to_python(self, value) -> list[str]:
        return parse_tags(super().to_python(value) or "")

    def prepare_value(self, value):
        return " ".join(value) if isinstance(value, list | tuple) else value


class ItemForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), label=_("Project"))
    title = forms.CharField(label=_("Title"), max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    content = forms.CharField(
        label=_("Content"),
        widget=forms.Textarea(attrs={"rows": 10}),
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
        strip=False,
    )
    tags = TagsField(label=_("Tags"), required=False, help_text=_("Separated by spaces or commas."))
    valid_until = forms.DateField(
        label=_("Valid until"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=_("Optional: the last day this is known to hold. After it the item shows as expired."),
    )
    space = forms.CharField(
        label=_("Space"),
        required=False,
        max_length=SPACE_MAX_LENGTH,
        help_text=_("Where the item lives in the project, such as architecture/auth; empty for the root."),
    )
    # The version the edit was opened at: a save over a newer change shows that change instead.
    version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, projects=None, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects if projects is not None else Project.objects.none()
        if editing:
            del self.fields["project"]
            return
        del self.fields["version"]
        if projects is not None and projects.count() == 1:
            self.fields["project"].initial = projects.first()


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Query"), required=False, max_length=settings.CONTEXTFORGE_MAX_QUERY_LENGTH)
    tags = TagsField(label=_("Tags"), required=False)
    space = forms.CharField(label=_("Space"), required=False, max_length=SPACE_MAX_LENGTH)
    limit = forms.IntegerField(min_value=1, max_value=100, required=False)


class ItemListForm(forms.Form):
    """The Items page's search and order, kept in its URL."""

    q = forms.CharField(label=_("Search titles and content"), required=False, max_length=200)
    sort = forms.ChoiceField(
        label=_("Order"),
        required=False,
        choices=[
            ("updated", _("Recently updated")),
            ("newest", _("Newest")),
            ("referenced", _("Most referenced files")),
        ],
    )


NO_ITEM_TICKED = _("Tick the items to move.")


class MoveItemsForm(forms.Form):
    """The Items page's bulk move: the items ticked (ids), and the space they go to."""

    space = forms.CharField(label=_("Move to space"), required=False, max_length=SPACE_MAX_LENGTH)

    def __init__(self, data, *args, **kwargs):
        super().__init__(data, *args, **kwargs)
        self.item_ids = [int(v) for v in data.getlist("items") if v.isascii() and v.isdigit()][:1000]

    def clean(self):
        cleaned = super().clean()
        if not self.item_ids:
            raise forms.ValidationError(NO_ITEM_TICKED)
        return cleaned


class ActivityFilterForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), label=_("Project"), required=False)
    user = forms.CharField(label=_("User"), required=False, max_length=150)
    key = forms.CharField(label=_("API key"), required=False, max_length=100)
    channel = forms.ChoiceField(label=_("Channel"), required=False)

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects
        self.fields["channel"].choices = [("", _("Any channel")), *((c, c) for c in CHANNELS)]


class SnapshotForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), label=_("Project"))
    name = forms.CharField(label=_("Name"), max_length=200)

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects


FILE_OR_REPOSITORY_FILE = _("Upload a file or pick one of a connected repository.")


class ImportForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), label=_("Project"))
    file = forms.FileField(
        label=_("File"),
        required=False,
        help_text=_("A file, or a zip of a folder of Markdown notes, agent memory files or records."),
    )
    repository_file = forms.ChoiceField(
        label=_("Or a folder or file of a connected repository"),
        required=False,
        help_text=_("As of the repository's last sync; a folder imports every note and record in it."),
    )
    format = forms.ChoiceField(
        label=_("Format"), required=False, help_text=_("Leave it empty to guess it from the file name.")
    )
    prune = forms.BooleanField(
        label=_("Remove the items whose source is gone"),
        required=False,
        help_text=_("Items this format imported earlier that the upload no longer holds are deleted."),
    )

    def __init__(self, *args, projects, repository_files=(), repository_folders=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects
        if projects.count() == 1:
            self.fields["project"].initial = projects.first()
        folders = [
            (
                f"{f.repository.pk}:{f.path}",
                ngettext(
                    "%(repository)s: %(path)s (%(n)s file)", "%(repository)s: %(path)s (%(n)s files)", f.files
                )
                % {"repository": f.repository.name, "path": f.path, "n": f.files},
            )
            for f in repository_folders
        ]
        files = [(f"{f.repository_id}:{f.path}", f"{f.repository.name}: {f.path}") for f in repository_files]
        self.fields["repository_file"].choices = [
            ("", "—"),
            *([(_("Folders"), folders)] if folders else []),
            *([(_("Files"), files)] if files else []),
        ]
        self.fields["format"].choices = [("", _("Guess from the file name")), *FORMATS.items()]

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("file") and not cleaned.get("repository_file") and "file" not in self.errors:
            self.add_error("file", FILE_OR_REPOSITORY_FILE)
        return cleaned

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload and upload.size > settings.CONTEXTFORGE_MAX_IMPORT_BYTES:
            raise forms.ValidationError(
                FILE_TOO_LARGE.format(file=upload.name, max=settings.CONTEXTFORGE_MAX_IMPORT_BYTES)
            )
        return upload


class ExportForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), label=_("Project"))
    format = forms.ChoiceField(label=_("Format"), choices=list(EXPORT_FORMATS.items()), initial="jsonl")
    tag = forms.CharField(label=_("Tag"), required=False, help_text=_("Only the items carrying this tag."))
    space = forms.CharField(
        label=_("Space"),
        required=False,
        max_length=SPACE_MAX_LENGTH,
        help_text=_("Only the items of this space and the spaces below it."),
    )

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects
        if projects.count() == 1:
            self.fields["project"].initial = projects.first()


def relation_choices() -> list[tuple[str, str]]:
    """Every way this item may stand to the one picked: "supersedes" (this item is the source) and
    "superseded by" ("supersedes:in": the picked item is the source); a kind that reads the same both
    ways is offered once."""
    choices = []
    for kind, (forward, reverse) in RELATION_LABELS.items():
        choices.append((f"{kind}:{OUT}", forward))
        if kind not in (RelationKind.CONTRADICTS, RelationKind.RELATES_TO):
            choices.append((f"{kind}:{IN}", reverse))
    return choices


class RelationForm(forms.Form):
    """Relate the item of the page to the item picked from a search."""

    kind = forms.ChoiceField(label=_("This item"), choices=relation_choices)
    other = forms.IntegerField(label=_("Item"), min_value=1, widget=forms.RadioSelect)

    def relation(self) -> tuple[str, str]:
        """The kind and the direction chosen."""
        kind, direction = self.cleaned_data["kind"].split(":")
        return kind, direction


class RelationSearchForm(forms.Form):
    relate_q = forms.CharField(label=_("Find the other item"), required=False, max_length=200)


class SupersedeForm(forms.Form):
    title = forms.CharField(label=_("Title"), max_length=settings.CONTEXTFORGE_MAX_TITLE_LENGTH)
    content = forms.CharField(
        label=_("Content"),
        widget=forms.Textarea(attrs={"rows": 10}),
        max_length=settings.CONTEXTFORGE_MAX_CONTENT_LENGTH,
        strip=False,
    )
    tags = TagsField(label=_("Tags"), required=False, help_text=_("Separated by spaces or commas."))
    old = forms.ChoiceField(
        label=_("The old version"),
        choices=[
            ("keep", _("Keep it as history, marked superseded")),
            ("trash", _("Move it to the trash")),
        ],
        initial="keep",
        widget=forms.RadioSelect,
    )
