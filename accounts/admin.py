from django.contrib import admin

from accounts.models import ApiKey, Invitation, Membership, Project


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "task_prefix", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "prefix",
        "owner",
        "project",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at"]
    readonly_fields = ["prefix", "hashed_secret", "created_at", "last_used_at"]
    search_fields = ["name", "prefix", "owner__username"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["project", "role", "created_by", "created_at", "expires_at", "accepted_by", "accepted_at"]
    list_filter = ["role"]
    readonly_fields = ["hashed_token", "created_by", "created_at", "accepted_by", "accepted_at"]
