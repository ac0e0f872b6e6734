"""How the dashboard shows stored values: content as Markdown, moments as "just now" or "5 minutes ago",
and which navigation link is the current page."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince
from django.utils.translation import gettext as _

from contextforge.markdown import render_markdown

register = template.Library()

# Below this, timesince would say "0 minutes".
JUST_NOW = timedelta(minutes=1)


@register.filter
def markdown(text: str) -> str:
    """Every stored text that people write (items, task descriptions, comments) is shown through here."""
    return mark_safe(render_markdown(text))  # render_markdown's output is sanitized by nh3


@register.filter
def ago(moment: datetime | None) -> str:
    if moment is None:
        return ""
    if timezone.now() - moment < JUST_NOW:
        return _("just now")
    return _("%(elapsed)s ago") % {"elapsed": timesince(moment)}


@register.simple_tag(takes_context=True)
def current(context, *view_names: str) -> str:
    """``aria-current="page"`` on a navigation link when the page's view name starts with one of
    ``view_names`` (``"tasks:"`` for every tasks page, ``"dashboard:item"`` for the items' pages)."""
    match = getattr(context.get("request"), "resolver_match", None)
    if match and match.view_name.startswith(view_names):
        return mark_safe(' aria-current="page"')
    return ""
