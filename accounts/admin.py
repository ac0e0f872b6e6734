from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from accounts import services
from accounts.models import ApiKey, Invitation, Membership, OidcIdentity, Project


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
    list_display = [
        "project",
        "role",
        "invitee_username",
        "created_by",
        "created_at",
        "expires_at",
        "accepted_by",
        "accepted_at",
    ]
    list_filter = ["role"]
    readonly_fields = [
        "hashed_token",
        "created_by",
        "created_at",
        "accepted_by",
        "accepted_at",
        "invitee_username",
        "invitee",
    ]
    actions = ["accept_for_invitee"]

    @admin.action(description=_("Accept for the invited user"))
    def accept_for_invitee(self, request, queryset):
        """An installation admin accepts addressed invitations on their invitee's behalf."""
        accepted = 0
        for invitation in queryset.filter(invitee__isnull=False):
            try:
                services.invitation_accept_addressed(invitation=invitation, user=invitation.invitee)
            except ValidationError as exc:
                self.message_user(request, f"{invitation}: {' '.join(exc.messages)}", messages.WARNING)
            else:
                accepted += 1
        self.message_user(request, _("Accepted %(n)d invitation(s).") % {"n": accepted}, messages.SUCCESS)


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signs in as whom through single sign-on. Adding one links an existing account to a provider's
    subject (its next sign-in lands there); deleting one makes that subject's next sign-in a new account."""

    list_display = ["user", "subject", "issuer", "created_at", "last_sign_in_at"]
    readonly_fields = ["created_at", "last_sign_in_at"]
    search_fields = ["user__username", "user__email", "subject"]
    autocomplete_fields = ["user"]
