from __future__ import annotations

import logging
import math

from axes.helpers import get_client_ip_address, get_cool_off
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, PasswordResetView
from django.core.exceptions import PermissionDenied, SuspiciousOperation, ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts import oidc, selectors, services
from accounts.forms import ApiKeyForm, InvitationForm, MemberAddForm, ProjectForm, RoleForm, SignUpForm
from accounts.models import ROLE_SCOPES, Project, Role, Scope
from accounts.snippets import key_snippets
from contextforge.api.errors import MACHINE_PREFIXES
from contextforge.forms import apply_errors

# The session keys of what a page shows once, after the POST that made it redirected there.
NEW_KEY_SECRET = "new_key_secret"
NEW_INVITATION_URL = "new_invitation_url"
ADMINS_ONLY = gettext_lazy("Only the project's admins may do this.")
PASSWORD_LOGIN_OFF = gettext_lazy("Sign-in with a password is turned off here.")
TOO_MANY_RESETS = gettext_lazy("Too many password-reset links were asked for. Try again in an hour.")

logger = logging.getLogger(__name__)


def _safe_next(request, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return fallback


# ----- API keys ---------------------------------------------------------------------------------


def _key_form(request, data=None) -> ApiKeyForm:
    user = request.user
    return ApiKeyForm(
        data,
        projects=selectors.projects_for(user=user),
        allowed_scopes=selectors.allowed_scopes(user=user),
        scopes_for=lambda project: selectors.allowed_scopes(user=user, project=project),
        initial=selectors.in_current_project(session=request.session),
    )


@require_http_methods(["GET", "POST"])
def key_list(request):
    form = _key_form(request, request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            created = services.api_key_create(
                owner=request.user,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                project=form.cleaned_data["project"],
                is_agent=form.cleaned_data["is_agent"],
            )
            # POST/redirect/GET: a reload shows the list, and never creates a second key.
            request.session[NEW_KEY_SECRET] = created.secret
            return redirect("keys:list")
    new_secret = request.session.pop(NEW_KEY_SECRET, None) if request.method == "GET" else None
    show_revoked = request.GET.get("revoked") == "1"
    context = {
        "keys": selectors.api_keys_of(user=request.user, include_revoked=show_revoked),
        "revoked_count": selectors.api_keys_of(user=request.user).filter(revoked_at__isnull=False).count(),
        "show_revoked": show_revoked,
        "form": form,
        "new_secret": new_secret,
        "snippets": key_snippets(secret=new_secret, base_url=request.build_absolute_uri("/"))
        if new_secret
        else None,
    }
    return render(request, "accounts/key_list.html", context, status=400 if form.errors else 200)


@require_POST
def key_revoke(request, pk: int):
    key = get_object_or_404(selectors.api_keys_of(user=request.user), pk=pk)
    services.api_key_revoke(key=key)
    messages.success(request, _("Revoked “%(name)s”.") % {"name": key.name})
    return redirect("keys:list")


# ----- projects ---------------------------------------------------------------------------------


def _project(request, slug: str, *, admin: bool = False) -> Project:
    """A project of the user's (404 otherwise), annotated with their ``role``; with ``admin``, one they
    administer (403 otherwise)."""
    project = get_object_or_404(selectors.projects_with_role(user=request.user), slug=slug)
    if admin and not _is_admin(project):
        raise PermissionDenied(ADMINS_ONLY)
    return project


def _is_admin(project: Project) -> bool:
    return Scope.ADMIN in ROLE_SCOPES[project.role]


def _choose(request, project: Project | None) -> None:
    if project is None:
        request.session.pop(selectors.CURRENT_PROJECT_KEY, None)
    else:
        request.session[selectors.CURRENT_PROJECT_KEY] = project.pk


@require_GET
def project_list(request):
    context = {
        "projects": selectors.projects_with_role(user=request.user),
        "invitations": selectors.invitations_for(user=request.user),
    }
    return render(request, "accounts/project_list.html", context)


@require_POST
def my_invitation_accept(request, pk: int):
    invitation = get_object_or_404(selectors.invitations_for(user=request.user), pk=pk)
    try:
        membership = services.invitation_accept_addressed(invitation=invitation, user=request.user)
    except ValidationError as exc:
        _report(request, exc)
        return redirect("projects:list")
    _welcome(request, membership)
    return redirect("projects:list")


def _welcome(request, membership) -> None:
    """Make the project just joined the current one and say so."""
    _choose(request, membership.project)
    messages.success(
        request,
        _("Welcome to “%(name)s”: you are a %(role)s.")
        % {"name": membership.project.name, "role": membership.get_role_display().lower()},
    )


@require_POST
def my_invitation_decline(request, pk: int):
    invitation = get_object_or_404(selectors.invitations_for(user=request.user), pk=pk)
    services.invitation_decline(invitation=invitation)
    messages.success(request, _("Invitation declined."))
    return redirect("projects:list")


@require_http_methods(["GET", "POST"])
def project_create(request):
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = services.project_create(owner=request.user, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            _choose(request, project)
            messages.success(request, _("Created the project “%(name)s”.") % {"name": project.name})
            return redirect("projects:settings", slug=project.slug)
    return render(request, "accounts/project_form.html", {"form": form}, status=400 if form.errors else 200)


@require_POST
def project_switch(request):
    pk = request.POST.get("project") or ""
    project = None
    if pk:
        project = selectors.projects_for(user=request.user).filter(pk=pk if pk.isdigit() else None).first()
        if project is None:
            raise PermissionDenied(_("You are not a member of this project."))
    _choose(request, project)
    return redirect(_safe_next(request, reverse("dashboard:overview")))


def _project_page(request, project: Project, template: str, status: int = 200, **context):
    context |= {"project": project, "is_admin": _is_admin(project), "tab": template}
    return render(request, f"accounts/{template}.html", context, status=status)


@require_http_methods(["GET", "POST"])
def project_settings(request, slug: str):
    project = _project(request, slug, admin=request.method == "POST")
    initial = {"name": project.name, "task_prefix": project.task_prefix, "description": project.description}
    form = ProjectForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.project_update(project=project, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, _("Saved."))
            return redirect("projects:settings", slug=project.slug)
    return _project_page(request, project, "project_settings", status=400 if form.errors else 200, form=form)


@require_GET
def project_members(request, slug: str):
    project = _project(request, slug)
    is_admin = _is_admin(project)
    context = {
        "memberships": selectors.memberships_of(project=project),
        "roles": Role.choices,
        "add_form": MemberAddForm(),
        "invitation_form": InvitationForm(),
        "invitations": selectors.open_invitations(project=project) if is_admin else [],
        "new_invitation_url": request.session.pop(NEW_INVITATION_URL, None),
    }
    return _project_page(request, project, "project_members", **context)


def _members_redirect(project: Project):
    return redirect("projects:members", slug=project.slug)


def _report(request, exc: ValidationError) -> None:
    """A service's or a form's errors, as one message on the page the POST redirects to."""
    messages.error(request, " ".join(exc.messages))


@require_POST
def member_add(request, slug: str):
    project = _project(request, slug, admin=True)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            services.invitation_address(project=project, created_by=request.user, **form.cleaned_data)
        except ValidationError as exc:
            _report(request, exc)
        else:
            # The same words whether the name is a user's or not (see services.invitation_address).
            messages.success(
                request,
                _(
                    "If %(username)s has an account and is not a member yet, they are invited; they join "
                    "when they accept."
                )
                % {"username": form.cleaned_data["username"].strip()},
            )
    else:
        _report(request, ValidationError(form.errors))
    return _members_redirect(project)


@require_POST
def member_role(request, slug: str, username: str):
    project = _project(request, slug, admin=True)
    membership = get_object_or_404(selectors.memberships_of(project=project), user__username=username)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            services.membership_change_role(membership=membership, role=form.cleaned_data["role"])
        except ValidationError as exc:
            _report(request, exc)
        else:
            messages.success(
                request,
                _("%(username)s is now %(role)s.")
                % {"username": username, "role": membership.get_role_display().lower()},
            )
    return _members_redirect(project)


@require_POST
def member_remove(request, slug: str, username: str):
    leaving = username == request.user.username
    project = _project(request, slug, admin=not leaving)
    membership = get_object_or_404(selectors.memberships_of(project=project), user__username=username)
    try:
        services.membership_remove(membership=membership)
    except ValidationError as exc:
        _report(request, exc)
        return _members_redirect(project)
    if leaving:
        if request.session.get(selectors.CURRENT_PROJECT_KEY) == project.pk:
            _choose(request, None)
        messages.success(request, _("You left “%(name)s”.") % {"name": project.name})
        return redirect("projects:list")
    messages.success(request, _("Removed %(username)s.") % {"username": username})
    return _members_redirect(project)


@require_POST
def invitation_create(request, slug: str):
    project = _project(request, slug, admin=True)
    form = InvitationForm(request.POST)
    if form.is_valid():
        try:
            created = services.invitation_create(
                project=project, created_by=request.user, **form.cleaned_data
            )
        except ValidationError as exc:
            _report(request, exc)
        else:
            url = request.build_absolute_uri(reverse("projects:join", args=[created.token]))
            request.session[NEW_INVITATION_URL] = url
    else:
        _report(request, ValidationError(form.errors))
    return _members_redirect(project)


@require_POST
def invitation_revoke(request, slug: str, pk: int):
    project = _project(request, slug, admin=True)
    invitation = get_object_or_404(selectors.open_invitations(project=project), pk=pk)
    services.invitation_revoke(invitation=invitation)
    messages.success(request, _("The invitation link no longer works."))
    return _members_redirect(project)


@login_not_required
@require_http_methods(["GET", "POST"])
def invitation_accept(request, token: str):
    """The invitation link: a signed-in user accepts it; a visitor signs in, or makes an account, first."""
    invitation = selectors.invitation_by_token(token=token)
    signed_in = request.user.is_authenticated
    signup = SignUpForm(request.POST if request.method == "POST" and not signed_in else None)
    if request.method == "POST" and invitation is not None:
        if not signed_in:
            if not settings.CONTEXTFORGE_PASSWORD_LOGIN:  # accounts come from the identity provider
                raise PermissionDenied(PASSWORD_LOGIN_OFF)
            if not signup.is_valid():
                return _join_page(request, invitation, signup, status=400)
            user = signup.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        try:
            membership = services.invitation_accept(token=token, user=request.user)
        except ValidationError as exc:
            _report(request, exc)
            return redirect("projects:list")
        _welcome(request, membership)
        return redirect("dashboard:overview")
    return _join_page(request, invitation, signup, status=200 if invitation else 404)


def _join_page(request, invitation, signup, *, status: int):
    context = {
        "invitation": invitation,
        "signup": signup if settings.CONTEXTFORGE_PASSWORD_LOGIN else None,
        "login_next": request.get_full_path(),
    }
    return render(request, "accounts/invitation.html", context, status=status)


def login_locked_out(request, original_response=None, credentials=None):
    """django-axes' answer to a sign-in while too many have failed: the form again, saying how long."""
    minutes = math.ceil(get_cool_off(request).total_seconds() / 60)
    message = ngettext(
        "Too many failed sign-ins. Try again in %(minutes)d minute.",
        "Too many failed sign-ins. Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}
    context = {"form": AuthenticationForm(request), "locked_out": message, **_sign_in_context()}
    return render(request, "registration/login.html", context, status=429)


# ----- signing in -------------------------------------------------------------------------------


def _sign_in_context() -> dict:
    return {
        "password_login": settings.CONTEXTFORGE_PASSWORD_LOGIN,
        "sso_name": oidc.display_name() if oidc.enabled() else "",
    }


class SignInView(LoginView):
    """Django's sign-in page, with "Sign in with <provider>" when single sign-on is configured; with
    password sign-in turned off, the form is gone and a password posted anyway is refused."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | _sign_in_context()

    def post(self, request, *args, **kwargs):
        if not settings.CONTEXTFORGE_PASSWORD_LOGIN:
            context = self.get_context_data(password_refused=PASSWORD_LOGIN_OFF)
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)


def _refused(request, refused: oidc.SignInRefused) -> HttpResponse:
    """The page of a single sign-on that did not succeed: what went wrong, and the way back."""
    logger.warning("single sign-on refused: %s %s", refused.refusal.code, refused.params or "")
    context = {"reason": refused.message(), "code": refused.refusal.code, **_sign_in_context()}
    return render(request, "registration/sso_refused.html", context, status=refused.refusal.status)


class OidcStartView(OIDCAuthenticationRequestView):
    """The "Sign in with <provider>" link: off to the provider's authorization endpoint, with a state, a
    nonce and a PKCE challenge kept in the session (mozilla-django-oidc)."""

    def __init__(self, **kwargs) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)  # its endpoint is read in get()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request):
        if not oidc.enabled():
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc.provider().authorization_endpoint
        except oidc.SignInRefused as refused:
            return _refused(request, refused)
        return super().get(request)


class OidcCallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: the code is exchanged and the ID token checked
    (accounts.backends.OidcBackend). Any failure is a page that says why, never a 500, and writes nothing."""

    def get(self, request):
        if not oidc.enabled():
            raise Http404
        try:
            return super().get(request)
        except oidc.SignInRefused as refused:
            return _refused(request, refused)
        except SuspiciousOperation:  # a state this session did not start
            return _refused(request, oidc.SignInRefused(oidc.STATE))

    def login_failure(self):
        request = self.request
        if request.GET.get("error"):
            error = request.GET["error"][:100]
            return _refused(request, oidc.SignInRefused(oidc.DENIED, error=error))
        if "oidc_states" not in request.session or not request.GET.get("state"):
            return _refused(request, oidc.SignInRefused(oidc.STATE))
        if getattr(self, "user", None) is not None and not self.user.is_active:
            return _refused(request, oidc.SignInRefused(oidc.INACTIVE))
        return _refused(request, oidc.SignInRefused(oidc.FAILED))


oidc_start = login_not_required(OidcStartView.as_view())
oidc_callback = login_not_required(OidcCallbackView.as_view())


class ThrottledPasswordResetView(PasswordResetView):
    """Django's password reset, with mail throttled per address and per e-mail address
    (services.password_reset_request); a refusal is the form again with a 429."""

    def get(self, request, *args, **kwargs):
        if not settings.CONTEXTFORGE_PASSWORD_LOGIN:
            raise PermissionDenied(PASSWORD_LOGIN_OFF)
        return super().get(request, *args, **kwargs)

    def post(self, request, *args, **kwargs):
        if not settings.CONTEXTFORGE_PASSWORD_LOGIN:
            raise PermissionDenied(PASSWORD_LOGIN_OFF)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        allowed = services.password_reset_request(
            address=get_client_ip_address(self.request), email=form.cleaned_data["email"]
        )
        if not allowed:
            form.add_error(None, TOO_MANY_RESETS)
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().form_valid(form)


def permission_denied(request, exception=None):
    """handler403: JSON for programs; for people, a page that says what was refused and what the
    signed-in user's role allows in each of their projects."""
    message = str(exception or "") or _("You may not do this.")
    if request.path.startswith(MACHINE_PREFIXES):
        return JsonResponse({"detail": message}, status=403)
    memberships = selectors.roles_of(user=request.user) if request.user.is_authenticated else []
    return render(request, "403.html", {"exception": message, "memberships": memberships}, status=403)
