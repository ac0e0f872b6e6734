"""How a hit's signals read in a page: each boost as the share of the score it added."""

from __future__ import annotations

from django import template
from django.utils.formats import number_format

from knowledge.ranking import signals as ranking

register = template.Library()


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
