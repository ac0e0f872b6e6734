from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _


class Role(models.TextChoices):
    VIEWER = "viewer", _("Viewer")
    MEMBER = "member", _("Member")
    ADMIN = "admin", _("Admin")


class Scope(models.TextChoices):
    READ = "read", _("Read")
    WRITE = "write", _("Write")
    ADMIN = "admin", _("Admin")


# What each role may do; an API key may do what both its scopes and its owner's role allow.
ROLE_SCOPES: dict[str, frozenset[str]] = {
    Role.VIEWER: frozenset({Scope.READ}),
    Role.MEMBER: frozenset({Scope.READ, Scope.WRITE}),
    Role.ADMIN: frozenset({Scope.READ, Scope.WRITE, Scope.ADMIN}),
}


class ProjectQuerySet(models.QuerySet):
    def visible_to(self, user, scope: str = Scope.READ, *, api_key: ApiKey | None = None) -> ProjectQuerySet:
        """The projects in which ``user`` may act with ``scope``: those where their role grants it, and
        through ``api_key`` only if the key holds the scope, and only in its project if it is bound."""
        if getattr(user, "pk", None) is None or (api_key is not None and scope not in api_key.scopes):
            return self.none()
        roles = [role for role, scopes in ROLE_SCOPES.items() if scope in scopes]
        # One membership per user and project: the join repeats no project.
        projects = self.filter(memberships__user=user, memberships__role__in=roles)
        if api_key is not None and api_key.project_id is not None:
            projects = projects.filter(pk=api_key.project_id)
        return projects


DEFAULT_TASK_PREFIX = "CF"
TASK_PREFIX_INVALID = _("A task-id prefix is 1 to 10 capital letters or digits, starting with a letter.")


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # The AUTH of "AUTH-12".
    task_prefix = models.CharField(
        max_length=10,
        default=DEFAULT_TASK_PREFIX,
        validators=[RegexValidator(r"^[A-Z][A-Z0-9]{0,9}\Z", TASK_PREFIX_INVALID)],
    )
    # The last task number handed out; it only goes up, so a deleted task's number is never reused.
    last_task_number = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    # The member asked for the project's weekly review digest by e-mail (knowledge.digest).
    weekly_digest = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="unique_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class InvitationQuerySet(models.QuerySet):
    def open(self, now) -> InvitationQuerySet:
        """Invitations that may still be accepted: unused and unexpired."""
        return self.filter(accepted_at__isnull=True, expires_at__gt=now)


class Invitation(models.Model):
    """A one-time link that makes whoever accepts it (signed in) a member with ``role``; or, addressed to
    a username, an invitation that only that user accepts (on the dashboard, through the API, or an
    installation admin for them). Nobody joins a project without accepting."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    hashed_token = models.CharField(max_length=64, unique=True, help_text=_("SHA-256 of the token."))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    # Addressed invitations: the name the admin typed, and its user if there is one. An invitation to a
    # name nobody has is kept the same way (and never accepted), so that nothing tells the two apart.
    invitee_username = models.CharField(max_length=150, blank=True)
    invitee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        to = f" for {self.invitee_username}" if self.invitee_username else ""
        return f"{self.project} ({self.role}){to} until {self.expires_at:%Y-%m-%d}"


class ApiKeyQuerySet(models.QuerySet):
    def active(self) -> ApiKeyQuerySet:
        """Keys that authenticate: not revoked, and their owner's account not deactivated."""
        return self.filter(revoked_at__isnull=True, owner__is_active=True)


class ApiKey(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    # A key bound to a project acts only there; an unbound key acts in every project of its owner.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    scopes = ArrayField(models.CharField(max_length=10, choices=Scope.choices), default=list)
    # Its creator says an agent uses it: what it writes waits in the review inbox as unreviewed.
    is_agent = models.BooleanField(_("agent's key"), default=False)
    prefix = models.CharField(
        max_length=20, help_text=_("The first characters of the secret, shown in lists.")
    )
    hashed_secret = models.CharField(max_length=64, unique=True, help_text=_("SHA-256 of the secret."))
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API key")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class PasswordResetRequest(models.Model):
    """A password-reset mail someone asked for, kept an hour to throttle them per address and account."""

    address = models.GenericIPAddressField()
    # SHA-256 of the lower-cased e-mail address entered (a user's or not): the address itself is not kept.
    account = models.CharField(max_length=64)
    requested_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.address} at {self.requested_at:%Y-%m-%d %H:%M}"


class OidcIdentity(models.Model):
    """Who a user is at an OpenID Connect provider: the provider's ``iss`` and its ``sub`` for them, which
    (unlike an e-mail address) the provider never gives to anybody else. A sign-in finds its user here."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="unique_oidc_identity")]
        verbose_name = _("OpenID Connect identity")
        verbose_name_plural = _("OpenID Connect identities")

    def __str__(self) -> str:
        return f"{self.user} as {self.subject} at {self.issuer}"
