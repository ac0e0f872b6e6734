from __future__ import annotations

from django import template

from knowledge.importers import DATE_SOURCES

register = template.Library()


@register.filter
def date_source(key: str) -> str:
    """Where an imported row's date comes from, in words (importers.DATE_SOURCES)."""
    return str(DATE_SOURCES.get(key, key))
