from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.keycache import key_cache
from accounts.models import ROLE_SCOPES, ApiKey, Invitation, Membership, OidcIdentity, Project, Role, Scope
from accounts.services import hash_secret, key_projects_cache_name

# The one answer for a project the caller cannot reach, whichever door asked (page, API, MCP, import):
# it never says whether the project exists.
PROJECT_UNKNOWN = _("No project '{slug}' that you may {scope} in.")

# Where the dashboard keeps the project chosen in the header's switcher (its pk; absent: all projects).
CURRENT_PROJECT_KEY = "current_project"


def projects_for(*, user, scope: str = "read", api_key: ApiKey | None = None) -> QuerySet[Project]:
    """The projects in which ``user`` (acting through ``api_key``, if any) may act with ``scope``."""
    return Project.objects.visible_to(user, scope, api_key=api_key)


def key_projects(*, api_key: ApiKey, scope: str = "read") -> list[Project]:
    """projects_for the key's owner through ``api_key``, as a list cached beside the key's lookup (see
    accounts/keycache.py; accounts.signals: a change of the key, its owner, the owner's memberships or
    one of these projects counts at once): what a search reads on every request. The projects are
    shared by the requests of a process: read them, do not change them."""
    projects, _version = key_cache.lookup(
        key_projects_cache_name(api_key.hashed_secret, scope),
        lambda: list(projects_for(user=api_key.owner, scope=scope, api_key=api_key)),
    )
    return list(projects)


CHANGES_FORBIDDEN = _("Your role in this project does not allow changes.")


def may_change(*, user, project_id: int) -> bool:
    """Whether ``user``'s role in the project allows writes (the dashboard's check; keys have ensure_may)."""
    return projects_for(user=user, scope="write").filter(pk=project_id).exists()


def ensure_may_change(*, user, project_id: int) -> None:
    if not may_change(user=user, project_id=project_id):
        raise PermissionDenied(CHANGES_FORBIDDEN)


def api_keys_of(*, user, include_revoked: bool = True) -> QuerySet[ApiKey]:
    keys = ApiKey.objects.filter(owner=user).select_related("project")
    return keys if include_revoked else keys.filter(revoked_at__isnull=True)


def projects_with_role(*, user, projects: QuerySet[Project] | None = None) -> QuerySet[Project]:
    """``projects`` (default: all the user's), each annotated with ``role``: the user's in it."""
    role = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    projects = projects if projects is not None else projects_for(user=user)
    return projects.annotate(role=Subquery(role))


def current_project(*, user, session) -> Project | None:
    """The project chosen in the switcher, if the user still belongs to it."""
    pk = session.get(CURRENT_PROJECT_KEY)
    if pk is None:
        return None
    return projects_for(user=user).filter(pk=pk).first()


def in_current_project(*, session) -> dict:
    """A new thing's form initial data: it starts in the current project, if one is chosen. No query: a
    form preselects an initial value only among the projects it offers, so a project the user has left
    is not preselected."""
    pk = session.get(CURRENT_PROJECT_KEY)
    return {"project": pk} if pk is not None else {}


def dashboard_projects(*, user, session, scope: str = Scope.READ) -> QuerySet[Project]:
    """What a dashboard page shows and its forms offer: the current project if one is chosen (and the
    role allows ``scope`` there), otherwise (none chosen, or the user left it) every project the role
    allows ``scope`` in."""
    projects = projects_for(user=user, scope=scope)
    current = current_project(user=user, session=session)
    return projects.filter(pk=current.pk) if current is not None else projects


def roles_of(*, user) -> QuerySet[Membership]:
    """The user's projects with their role in each, by project name."""
    return Membership.objects.filter(user=user).select_related("project").order_by("project__name")


def memberships_of(*, project: Project) -> QuerySet[Membership]:
    return Membership.objects.filter(project=project).select_related("user").order_by("user__username")


def membership_get(*, project: Project, username: str) -> Membership | None:
    return memberships_of(project=project).filter(user__username=username).first()


def open_invitations(*, project: Project) -> QuerySet[Invitation]:
    return Invitation.objects.filter(project=project).open(timezone.now()).select_related("created_by")


def invitation_by_token(*, token: str) -> Invitation | None:
    """An invitation link that may still be accepted, by its token."""
    return (
        Invitation.objects.open(timezone.now())
        .select_related("project")
        .filter(hashed_token=hash_secret(token), invitee_username="")
        .first()
    )


def invitations_for(*, user) -> QuerySet[Invitation]:
    """The invitations addressed to ``user`` that they may still accept or decline."""
    return (
        Invitation.objects.open(timezone.now())
        .filter(invitee=user)
        .select_related("project", "created_by")
        .order_by("-created_at")
    )


def allowed_scopes(*, user, project: Project | None = None) -> list[str]:
    """The scopes a new key of ``user`` may hold: what their role allows in ``project``, or without one
    what it allows in any of their projects (a key never acts beyond its owner's role anyway)."""
    memberships = Membership.objects.filter(user=user)
    if project is not None:
        memberships = memberships.filter(project=project)
    granted = set().union(*(ROLE_SCOPES[Role(role)] for role in memberships.values_list("role", flat=True)))
    return [scope for scope in Scope.values if scope in granted]


def oidc_user(*, issuer: str, subject: str):
    """The user an OpenID Connect identity was given to, or None on its first sign-in."""
    identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    return identity.user if identity else None


def user_memberships(*, user, projects) -> QuerySet[Membership]:
    """The user's memberships of ``projects`` (their role, and whether they get the weekly digest)."""
    return Membership.objects.filter(user=user, project__in=projects)
