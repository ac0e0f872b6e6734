from __future__ import annotations

import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from accounts.keycache import handed_out, key_cache
from accounts.models import (
    DEFAULT_TASK_PREFIX,
    TASK_PREFIX_INVALID,
    ApiKey,
    Invitation,
    Membership,
    OidcIdentity,
    PasswordResetRequest,
    Project,
    Role,
    Scope,
)

logger = logging.getLogger(__name__)

SECRET_PREFIX = "cf_live_"
INVALID_SCOPES = _("Unknown scope(s): {scopes}. Use read, write and admin.")
NO_SCOPES = _("Give the key at least one scope.")
NAME_REQUIRED = _("A project needs a name.")
NAME_TOO_LONG = _("A project name has at most {max} characters.")
SLUG_INVALID = _("A slug is 1 to 100 lowercase letters, digits, hyphens or underscores.")
SLUG_TAKEN = _("A project with this slug exists already.")
ROLE_INVALID = _("Not a role: choose one of {choices}.")
ALREADY_MEMBER = _("{username} is a member of this project already.")
LAST_ADMIN = _("A project keeps at least one admin: make someone else admin first.")
INVITATION_INVALID = _("This invitation link is unknown, used already or expired.")
INVITATION_DAYS_INVALID = _("An invitation is valid for 1 to {max} days.")
# Password-reset mail: at most this many asked for per address, and per e-mail address, in the window.
PASSWORD_RESETS_PER_ADDRESS = 5
PASSWORD_RESETS_PER_ACCOUNT = 3
PASSWORD_RESET_WINDOW = timedelta(hours=1)
# An invitation link is valid this long unless its creator says otherwise, and never longer than the maximum.
INVITATION_DAYS = 7
INVITATION_MAX_DAYS = 90


def hash_secret(secret: str) -> str:
    """How a key's secret and an invitation's token are stored: both are random, so a fast hash will do."""
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
def api_key_create(
    *, owner, name: str, scopes: list[str], project: Project | None = None, is_agent: bool = False
) -> NewApiKey:
    """A new key; ``is_agent``: an agent uses it, so what it writes waits in the review inbox."""
    scopes = parse_scopes(scopes)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        owner=owner,
        project=project,
        name=name.strip() or "API key",
        scopes=scopes,
        is_agent=is_agent,
        prefix=secret[: len(SECRET_PREFIX) + 6],
        hashed_secret=hash_secret(secret),
    )
    return NewApiKey(key=key, secret=secret)


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def key_cache_name(hashed_secret: str) -> str:
    return f"apikey:{hashed_secret}"


def key_projects_cache_name(hashed_secret: str, scope: str) -> str:
    return f"apikey-projects:{hashed_secret}:{scope}"


def key_cache_forget(hashed_secrets) -> None:
    """Forget these keys' cached lookups and projects (accounts.signals calls it on every change that
    concerns a key: the key, its owner, the owner's memberships, a project of theirs), in every process,
    now and again when the change commits (accounts/keycache.py)."""
    names = []
    for hashed in hashed_secrets:
        names.append(key_cache_name(hashed))
        names += [key_projects_cache_name(hashed, scope) for scope in Scope.values]
    key_cache.forget(names)


def api_key_authenticate(*, secret: str) -> ApiKey | None:
    """The active key behind ``secret``, or None. A found key is cached briefly (accounts/keycache.py:
    this process, then the files or Redis that every process shares): a change to the key, its owner or
    the owner's memberships reaches every process at once, so a revoked key is refused on its next
    request, by any web worker."""
    if not secret.startswith(SECRET_PREFIX):
        return None
    hashed = hash_secret(secret)
    name = key_cache_name(hashed)

    def load() -> ApiKey | None:
        return ApiKey.objects.active().select_related("owner").filter(hashed_secret=hashed).first()

    key, version = key_cache.lookup(name, load)
    if key is None:
        return None
    now = timezone.now()
    # Writing on every request would serialize concurrent clients on one row; a minute is precise enough.
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
        key_cache.refresh(name, key, version)
    return handed_out(key)


def _clean_project(values: dict) -> dict:
    """Validate any of name, description, task_prefix; one ValidationError names each bad field."""
    errors: dict[str, str] = {}
    cleaned = dict(values)
    max_name = Project._meta.get_field("name").max_length
    if "name" in values:
        name = values["name"].strip() if isinstance(values["name"], str) else ""
        if not name:
            errors["name"] = NAME_REQUIRED
        elif len(name) > max_name:
            errors["name"] = NAME_TOO_LONG.format(max=max_name)
        cleaned["name"] = name
    if "description" in values:
        cleaned["description"] = (values["description"] or "").strip()
    if "task_prefix" in values:
        prefix = (values["task_prefix"] or "").strip().upper()
        try:
            Project._meta.get_field("task_prefix").run_validators(prefix)
        except ValidationError:
            errors["task_prefix"] = TASK_PREFIX_INVALID
        cleaned["task_prefix"] = prefix
    if errors:
        raise ValidationError(errors)
    return cleaned


# Words the dashboard's project URLs use (/dashboard/projects/new/): no project is called that.
RESERVED_SLUGS = frozenset({"new", "switch", "join"})


def _slug_taken(slug: str) -> bool:
    return slug in RESERVED_SLUGS or Project.objects.filter(slug=slug).exists()


def _free_slug(name: str) -> str:
    """A slug made from ``name`` that no project has yet."""
    base = slugify(name)[:90] or "project"
    slug, n = base, 1
    while _slug_taken(slug):
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def project_create(
    *,
    name: str,
    slug: str = "",
    owner=None,
    description: str = "",
    task_prefix: str = DEFAULT_TASK_PREFIX,
) -> Project:
    """A new project; its creator (``owner``) is its first admin. Without a slug one is made from the name."""
    cleaned = _clean_project({"name": name, "description": description, "task_prefix": task_prefix})
    if slug:
        try:
            Project._meta.get_field("slug").run_validators(slug)
        except ValidationError:
            raise ValidationError({"slug": SLUG_INVALID}) from None
        if _slug_taken(slug):
            raise ValidationError({"slug": SLUG_TAKEN})
    project = Project.objects.create(slug=slug or _free_slug(cleaned["name"]), **cleaned)
    if owner is not None:
        Membership.objects.create(user=owner, project=project, role=Role.ADMIN)
    return project


@transaction.atomic
def project_update(*, project: Project, **fields) -> Project:
    """Change any of name, description, task_prefix (the slug, in URLs and keys' scripts, stays)."""
    cleaned = _clean_project(fields)
    for name, value in cleaned.items():
        setattr(project, name, value)
    project.save(update_fields=list(cleaned))
    return project


def membership_set(*, user, project: Project, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(user=user, project=project, defaults={"role": role})
    return membership


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise ValidationError({"role": ROLE_INVALID.format(choices=", ".join(Role.values))})


def _lock_memberships(project: Project) -> None:
    """Hold the project's row until the transaction ends: changes to its admins happen one at a time,
    so two admins demoting each other at once cannot leave it with none."""
    Project.objects.select_for_update().filter(pk=project.pk).first()


def _ensure_another_admin(membership: Membership, field: str) -> None:
    if membership.role != Role.ADMIN:
        return
    others = Membership.objects.filter(project_id=membership.project_id, role=Role.ADMIN)
    if not others.exclude(pk=membership.pk).exists():
        raise ValidationError({field: LAST_ADMIN})


@transaction.atomic
def invitation_address(
    *, project: Project, username: str, created_by, role: str = Role.MEMBER, days: int = INVITATION_DAYS
) -> None:
    """Invite someone by username: they join when they accept. Whether the name is a user's, or a
    member's already, changes nothing the caller can see (an invitation to a name nobody has is kept,
    and never accepted); a member already, or a waiting invitation to the name, makes nothing new."""
    _check_role(role)
    if not isinstance(days, int) or not 1 <= days <= INVITATION_MAX_DAYS:
        raise ValidationError({"days": INVITATION_DAYS_INVALID.format(max=INVITATION_MAX_DAYS)})
    username = username.strip()
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is not None and Membership.objects.filter(user=user, project=project).exists():
        return
    if Invitation.objects.open(timezone.now()).filter(project=project, invitee_username=username).exists():
        return
    Invitation.objects.create(
        project=project,
        role=role,
        created_by=created_by,
        hashed_token=hash_secret(secrets.token_urlsafe(32)),  # no link: the token is never shown
        expires_at=timezone.now() + timedelta(days=days),
        invitee_username=username,
        invitee=user,
    )


@transaction.atomic
def invitation_accept_addressed(*, invitation: Invitation, user, now: datetime | None = None) -> Membership:
    """The invitee accepts an invitation addressed to them (an installation admin may, for them)."""
    now = now or timezone.now()
    locked = Invitation.objects.open(now).select_for_update().filter(pk=invitation.pk, invitee=user).first()
    if locked is None:
        raise ValidationError({"invitation": INVITATION_INVALID})
    return _accepted(locked, user, now)


def _accepted(invitation: Invitation, user, now: datetime) -> Membership:
    """``invitation`` (locked) used by ``user``: a member of its project with its role."""
    if Membership.objects.filter(user=user, project_id=invitation.project_id).exists():
        raise ValidationError({"invitation": ALREADY_MEMBER.format(username=user.username)})
    invitation.accepted_by, invitation.accepted_at = user, now
    invitation.save(update_fields=["accepted_by", "accepted_at"])
    return Membership.objects.create(user=user, project_id=invitation.project_id, role=invitation.role)


def invitation_decline(*, invitation: Invitation) -> None:
    invitation.delete()


@transaction.atomic
def membership_change_role(*, membership: Membership, role: str) -> Membership:
    _check_role(role)
    _lock_memberships(membership.project)
    membership.refresh_from_db()
    if role != Role.ADMIN:
        _ensure_another_admin(membership, "role")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    """Remove a member, or leave a project; never its last admin. The member's keys bound to the project
    stop working with the membership (their role there is gone)."""
    _lock_memberships(membership.project)
    membership.refresh_from_db()
    _ensure_another_admin(membership, "username")
    membership.delete()


@dataclass(frozen=True)
class NewInvitation:
    invitation: Invitation
    token: str  # in the link, shown once, never stored


@transaction.atomic
def invitation_create(
    *, project: Project, created_by, role: str = Role.MEMBER, days: int = INVITATION_DAYS
) -> NewInvitation:
    _check_role(role)
    if not isinstance(days, int) or not 1 <= days <= INVITATION_MAX_DAYS:
        raise ValidationError({"days": INVITATION_DAYS_INVALID.format(max=INVITATION_MAX_DAYS)})
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        project=project,
        role=role,
        created_by=created_by,
        hashed_token=hash_secret(token),
        expires_at=timezone.now() + timedelta(days=days),
    )
    return NewInvitation(invitation=invitation, token=token)


@transaction.atomic
def invitation_accept(*, token: str, user, now: datetime | None = None) -> Membership:
    """Use a one-time invitation: ``user`` becomes a member with its role (a member already keeps their
    role, and the link stays usable for someone else)."""
    now = now or timezone.now()
    invitation = (
        Invitation.objects.open(now)
        .select_for_update()
        .filter(hashed_token=hash_secret(token), invitee_username="")
        .first()
    )
    if invitation is None:
        raise ValidationError({"invitation": INVITATION_INVALID})
    return _accepted(invitation, user, now)


def invitation_revoke(*, invitation: Invitation) -> None:
    invitation.delete()


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


@transaction.atomic
def password_reset_request(*, address: str, email: str, now: datetime | None = None) -> bool:
    """Count a password-reset mail asked for from ``address`` for ``email``: False (and nothing counted)
    when that address or that e-mail address has asked too often within the window. Whether an account
    has that e-mail address plays no part, so the answer reveals nothing."""
    now = now or timezone.now()
    PasswordResetRequest.objects.filter(requested_at__lte=now - PASSWORD_RESET_WINDOW).delete()
    account = hash_secret(email.strip().lower())
    recent = PasswordResetRequest.objects.filter(requested_at__gt=now - PASSWORD_RESET_WINDOW)
    if (
        recent.filter(address=address).count() >= PASSWORD_RESETS_PER_ADDRESS
        or recent.filter(account=account).count() >= PASSWORD_RESETS_PER_ACCOUNT
    ):
        return False
    PasswordResetRequest.objects.create(address=address, account=account, requested_at=now)
    return True


# What Django's username validator accepts; the rest of a provider's preferred name is dropped.
NOT_USERNAME = re.compile(r"[^\w.@+-]")


def _free_username(*hints: str) -> str:
    """The first hint that leaves a username once cleaned (else "user"), with -2, -3 … until it is free."""
    base = next((name for hint in hints if (name := NOT_USERNAME.sub("", hint or "")[:140])), "user")
    User = get_user_model()
    name, number = base, 1
    while User.objects.filter(username__iexact=name).exists():
        number += 1
        name = f"{base}-{number}"
    return name


def oidc_user_sign_in(
    *,
    issuer: str,
    subject: str,
    email: str,
    preferred_username: str = "",
    first_name: str = "",
    last_name: str = "",
    project_roles: dict[str, str] | None = None,
    now: datetime | None = None,
):
    """The user an OpenID Connect provider signed in as ``subject``: the one this identity was first
    given to, or a new one (no usable password, no project) on a first sign-in. An address found on
    another account is not merged with it: an e-mail typed into a profile proves nothing (an installation
    admin may link an identity to an account in the admin). The provider's e-mail address and names are
    kept up to date; ``project_roles`` (slug -> role, from the groups claim) gives the user that role in
    each of those projects that exists, but never takes a project's last admin away."""
    for attempt in (1, 2):
        # Two first sign-ins at once (the same subject, or two wanting one username): the second is tried
        # again, and finds the other's user or the next free name.
        try:
            with transaction.atomic():
                user = _oidc_user(
                    issuer=issuer, subject=subject, email=email, hints=(preferred_username, email)
                )
            break
        except IntegrityError:
            if attempt == 2:
                raise
    with transaction.atomic():
        fields = {"email": email, "first_name": first_name[:150], "last_name": last_name[:150]}
        changed = [name for name, value in fields.items() if value and getattr(user, name) != value]
        for name in changed:
            setattr(user, name, fields[name])
        if changed:
            user.save(update_fields=changed)
        OidcIdentity.objects.filter(issuer=issuer, subject=subject).update(
            last_sign_in_at=now or timezone.now()
        )
        for slug, role in (project_roles or {}).items():
            _group_role(user, slug, role)
    return user


def _oidc_user(*, issuer: str, subject: str, email: str, hints: tuple[str, str]):
    identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if identity is not None:
        return identity.user
    username = _free_username(hints[0], hints[1].partition("@")[0])
    user = get_user_model().objects.create_user(username, email=email)  # no password: unusable
    OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    return user


def _group_role(user, slug: str, role: str) -> None:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return
    membership = Membership.objects.filter(user=user, project=project).first()
    if membership is None:
        membership_set(user=user, project=project, role=role)
    elif membership.role != role:
        try:
            membership_change_role(membership=membership, role=role)
        except ValidationError:
            logger.warning("%s stays admin of %s: the last admin is not demoted by a group", user, slug)


def membership_digest_set(*, user, project: Project, enabled: bool) -> bool:
    """Ask for (or stop) the project's weekly review digest by e-mail; whether the user is a member."""
    return bool(Membership.objects.filter(user=user, project=project).update(weekly_digest=enabled))
