from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import ApiKey, Membership, Project, Role, Scope

SECRET_PREFIX = "cf_live_"
INVALID_SCOPES = _("Unknown scope(s): {scopes}. Use read, write and admin.")
NO_SCOPES = _("Give the key at least one scope.")


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class NewApiKey:
    key: ApiKey
    secret: str  # shown once, never stored


def parse_scopes(raw: str | list[str]) -> list[str]:
    scopes = raw.split(",") if isinstance(raw, str) else list(raw)
    scopes = sorted({s.strip() for s in scopes if s.strip()})
    unknown = [s for s in scopes if s not in Scope.values]
    if unknown:
        raise ValidationError({"scopes": INVALID_SCOPES.format(scopes=", ".join(unknown))})
    if not scopes:
        raise ValidationError({"scopes": NO_SCOPES})
    return scopes


@transaction.atomic
def api_key_create(*, owner, name: str, scopes: list[str], project: Project | None = None) -> NewApiKey:
    scopes = parse_scopes(scopes)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        owner=owner,
        project=project,
        name=name.strip() or "API key",
        scopes=scopes,
        prefix=secret[: len(SECRET_PREFIX) + 6],
        hashed_secret=hash_secret(secret),
    )
    return NewApiKey(key=key, secret=secret)


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def api_key_authenticate(*, secret: str) -> ApiKey | None:
    if not secret.startswith(SECRET_PREFIX):
        return None
    try:
        key = ApiKey.objects.active().select_related("owner").get(hashed_secret=hash_secret(secret))
    except ApiKey.DoesNotExist:
        return None
    now = timezone.now()
    # Writing on every request would serialize concurrent clients on one row; a minute is precise enough.
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


@transaction.atomic
def project_create(*, name: str, slug: str, owner=None) -> Project:
    project = Project.objects.create(name=name, slug=slug)
    if owner is not None:
        Membership.objects.create(user=owner, project=project, role=Role.ADMIN)
    return project


def membership_set(*, user, project: Project, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(user=user, project=project, defaults={"role": role})
    return membership


@transaction.atomic
def user_ensure(*, username: str, password: str | None = None, superuser: bool = False):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.is_staff = user.is_superuser = superuser
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    return user, created
