"""How relations read in a page: a hit's relations out of the search's ``links``."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def links_of(links: dict | None, item_id: int) -> list:
    """The relations ``selectors.search_for`` found for the item ``item_id`` (none if it found none)."""
    return (links or {}).get(item_id, [])
