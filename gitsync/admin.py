from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.utils.translation import gettext_lazy as _

from gitsync import services
from gitsync.models import Commit, Repository
from gitsync.tasks import queue_first_sync, queue_sync


class RepositoryAdminForm(forms.ModelForm):
    # Write-only: the stored credential is never rendered, not even masked; the form says whether one is set.
    credential = forms.CharField(
        label=_("credential"),
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=_("user:token or a token for an https remote. Empty: keep what is stored."),
    )
    clear_credential = forms.BooleanField(label=_("Remove the stored credential"), required=False)

    class Meta:
        model = Repository
        fields = ["project", "name", "url", "branch", "enabled"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.credential:
            self.fields["credential"].help_text = _(
                "A credential is set. Type a new one to replace it; empty keeps it."
            )

    def clean_url(self):
        from django.core.exceptions import ValidationError

        try:
            return services.source_check(self.cleaned_data["url"])
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["url"]) from None


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    form = RepositoryAdminForm
    list_display = [
        "name",
        "project",
        "url",
        "branch",
        "enabled",
        "status",
        "last_success_at",
        "last_error_short",
        "commit_count",
    ]
    list_filter = ["enabled", "project"]
    search_fields = ["name", "url"]
    readonly_fields = [
        "last_synced_commit",
        "last_success_at",
        "last_attempt_at",
        "last_error",
        "webhook_secret",
    ]
    actions = ["sync_now"]

    def get_fields(self, request, obj=None):
        # Removing a credential is offered only where one is set; the admin lays out the page from this
        # list, so the form keeps the field rather than deleting it under the admin's feet.
        fields = super().get_fields(request, obj)
        if obj is None or not obj.credential:
            fields = [name for name in fields if name != "clear_credential"]
        return fields

    def save_model(self, request, obj, form, change):
        """Through the services, which take a credential out of the URL and keep it apart."""
        data = form.cleaned_data
        fields = {name: data[name] for name in ("project", "name", "url", "branch", "enabled")}
        if data.get("clear_credential"):
            fields["credential"] = ""
        elif data.get("credential"):
            fields["credential"] = data["credential"]
        if change:
            saved = services.repository_update(repository=Repository.objects.get(pk=obj.pk), **fields)
        else:
            saved = services.repository_create(**fields)
            queue_first_sync(saved)
        obj.pk, obj.url, obj.credential = saved.pk, saved.url, saved.credential

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(commit_total=Count("commits"))

    @admin.display(description=_("commits"), ordering="commit_total")
    def commit_count(self, obj) -> int:
        return obj.commit_total

    @admin.display(description=_("last error"))
    def last_error_short(self, obj) -> str:
        return (obj.last_error[:80] + "…") if len(obj.last_error) > 80 else obj.last_error

    @admin.action(description=_("Sync now"))
    def sync_now(self, request, queryset):
        queued = 0
        for repository in queryset.filter(enabled=True):
            try:
                queued += queue_sync(repository.pk)
            except Exception as exc:  # broker down: sync here and now instead
                report = services.repository_sync(repository=repository)
                self.message_user(
                    request, f"{repository}: {report.status} {report.message} ({exc})", messages.WARNING
                )
        self.message_user(request, _("Queued %(n)d sync(s).") % {"n": queued}, messages.SUCCESS)


@admin.register(Commit)
class CommitAdmin(admin.ModelAdmin):
    list_display = ["sha", "repository", "author", "committed_at"]
    list_filter = ["repository"]
    search_fields = ["sha", "message", "author"]
