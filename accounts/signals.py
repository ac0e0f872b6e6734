"""A cached API key's lookup (accounts.services.api_key_authenticate) is dropped by every change that
concerns the key: the key itself (revoked, its scopes or project changed, deleted), its owner (deactivated),
the owner's memberships (a role changed, or removed from a project) and their projects (renamed). Signals, so that a change made in
the admin counts as one made through a service."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts.models import ApiKey, Membership, Project
from accounts.services import key_cache_forget


@receiver([post_save, post_delete], sender=ApiKey, dispatch_uid="accounts.key_changed")
def key_changed(sender, instance: ApiKey, **kwargs) -> None:
    if kwargs.get("update_fields") == frozenset({"last_used_at"}):
        return
    key_cache_forget([instance.hashed_secret])


def forget_keys_of(user_id: int) -> None:
    key_cache_forget(ApiKey.objects.filter(owner_id=user_id).values_list("hashed_secret", flat=True))


@receiver([post_save, post_delete], sender=Membership, dispatch_uid="accounts.membership_changed")
def membership_changed(sender, instance: Membership, **kwargs) -> None:
    forget_keys_of(instance.user_id)


@receiver([post_save, post_delete], sender=Project, dispatch_uid="accounts.project_changed")
def project_changed(sender, instance: Project, **kwargs) -> None:
    # A cached key's projects hold the project's slug and name: a rename reaches them at once.
    members = Membership.objects.filter(project=instance).values("user_id")
    owners_keys = ApiKey.objects.filter(owner_id__in=members).values_list("hashed_secret", flat=True)
    bound_keys = ApiKey.objects.filter(project=instance).values_list("hashed_secret", flat=True)
    key_cache_forget({*owners_keys, *bound_keys})


@receiver([post_save, post_delete], sender=get_user_model(), dispatch_uid="accounts.owner_changed")
def owner_changed(sender, instance, **kwargs) -> None:
    if kwargs.get("update_fields") == frozenset({"last_login"}):  # a sign-in changes nothing a key holds
        return
    forget_keys_of(instance.pk)
