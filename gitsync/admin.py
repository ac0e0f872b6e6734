from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.utils.translation import gettext_lazy as _

from gitsync import services
from gitsync.models import Commit, Repository
from gitsync.tasks import sync_repository


class RepositoryAdminForm(forms.ModelForm):
    class Meta:
        model = Repository
        fields = ["project", "name", "url", "branch", "enabled"]

    def clean_url(self):
        from django.conf import settings
        from django.core.exceptions import ValidationError

        from gitsync.sources import validate_source

        try:
            return validate_source(
                self.cleaned_data["url"], local_roots=settings.CONTEXTFORGE_GIT_LOCAL_ROOTS
            )
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
                sync_repository.delay(repository.pk)
                queued += 1
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
