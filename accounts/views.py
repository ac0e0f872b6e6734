from __future__ import annotations

import math

from axes.helpers import get_cool_off
from django.contrib import messages
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors, services
from accounts.forms import ApiKeyForm


@require_http_methods(["GET", "POST"])
def key_list(request):
    projects = selectors.projects_for(user=request.user)
    form = ApiKeyForm(request.POST or None, projects=projects)
    new_secret = None
    if request.method == "POST" and form.is_valid():
        created = services.api_key_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            project=form.cleaned_data["project"],
        )
        new_secret = created.secret
        form = ApiKeyForm(projects=projects)
    context = {"keys": selectors.api_keys_of(user=request.user), "form": form, "new_secret": new_secret}
    return render(request, "accounts/key_list.html", context)


@require_POST
def key_revoke(request, pk: int):
    key = get_object_or_404(selectors.api_keys_of(user=request.user), pk=pk)
    services.api_key_revoke(key=key)
    messages.success(request, _("Revoked “%(name)s”.") % {"name": key.name})
    return redirect("keys:list")


def login_locked_out(request, original_response=None, credentials=None):
    """django-axes' answer to a sign-in while too many have failed: the form again, saying how long."""
    minutes = math.ceil(get_cool_off(request).total_seconds() / 60)
    message = ngettext(
        "Too many failed sign-ins. Try again in %(minutes)d minute.",
        "Too many failed sign-ins. Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}
    context = {"form": AuthenticationForm(request), "locked_out": message}
    return render(request, "registration/login.html", context, status=429)
