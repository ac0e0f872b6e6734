"""How a hit reads in a page: each boost as the share of the score it added, and what its keyword
filter matched, marked."""

from __future__ import annotations

from django import template
from django.utils.formats import number_format
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

from knowledge.ranking import Hit
from knowledge.ranking import signals as ranking

register = template.Library()

EXCERPT_CHARS = 220  # of an item's content shown under a hit
EXCERPT_LEAD = 60  # characters shown before the first highlight, when the excerpt cannot start at the top


@register.filter
def percent(value: float, digits: int = 1) -> str:
    # number_format truncates the digits it drops; round first so 14.99 % reads 15.0 %.
    return f"{number_format(round(value * 100, digits), digits)}%"


@register.filter
def recency_boost(signals: ranking.Signals) -> float:
    return ranking.RECENCY_WEIGHT * signals.recency


@register.filter
def git_boost(signals: ranking.Signals) -> float:
    return ranking.GIT_WEIGHT * signals.git


@register.filter
def is_penalized(signals: ranking.Signals) -> bool:
    return signals.proposal_penalty < 1.0


@register.simple_tag
def penalty_percent() -> str:
    return percent(1 - ranking.PROPOSAL_PENALTY, 0)


@register.filter
def marked_title(hit: Hit) -> str:
    """The hit's title, escaped, with each stretch its keyword filter matched in a <mark>."""
    title = hit.item.title
    return _marked(title, hit.highlights.get("title", []), 0, len(title))


@register.filter
def content_excerpt(hit: Hit, length: int = EXCERPT_CHARS) -> str:
    """Up to ``length`` characters of the hit's content, escaped, with the stretches its keyword filter
    matched in a <mark>; an ellipsis where text was cut. It starts at the passage that matched the query
    best, when that is not the item's opening (a long doc answers in its fifth section), else a little
    before the first keyword match that the first ``length`` characters would miss."""
    text, spans = hit.item.content, hit.highlights.get("content", [])
    passage = getattr(hit, "passage", None)
    if passage is not None and passage.start > 0:
        if text[passage.start : passage.end] != passage.text:  # not offsets in the content: as it is
            cut = passage.text[:length]
            return mark_safe("…" + escape(cut) + ("…" if len(cut) < len(passage.text) else ""))
        start = passage.start
        within = [span for span in spans if passage.start <= span.start < passage.end]
        if within and within[0].end > start + length:
            start = max(start, within[0].start - EXCERPT_LEAD)
    else:
        start = max(0, spans[0].start - EXCERPT_LEAD) if spans and spans[0].end > length else 0
    end = min(len(text), start + length)
    body = _marked(text, spans, start, end)
    return mark_safe(("…" if start else "") + body + ("…" if end < len(text) else ""))


def _marked(text: str, spans, start: int, end: int) -> str:
    pieces, at = [], start
    for span in spans:
        if span.end <= at or span.start >= end:
            continue
        span_start, span_end = max(span.start, at), min(span.end, end)
        pieces.append(escape(text[at:span_start]))
        pieces.append(format_html("<mark>{}</mark>", text[span_start:span_end]))
        at = span_end
    pieces.append(escape(text[at:end]))
    return mark_safe("".join(pieces))
