from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
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


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="unique_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class ApiKey(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    # A key bound to a project acts only there; an unbound key acts in every project of its owner.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    scopes = ArrayField(models.CharField(max_length=10, choices=Scope.choices), default=list)
    prefix = models.CharField(
        max_length=20, help_text=_("The first characters of the secret, shown in lists.")
    )
    hashed_secret = models.CharField(max_length=64, unique=True, help_text=_("SHA-256 of the secret."))
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API key")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
