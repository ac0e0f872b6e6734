from knowledge.ranking.search import (
    Hit,
    PassageSpan,
    SearchFilters,
    SearchResult,
    forget_caches,
    highlights_data,
    reference_status,
    search,
)
from knowledge.ranking.streams import CACHE, EXACT, EXACT_OVER_BUDGET, MATRIX, items_naming

__all__ = [
    "CACHE",
    "EXACT",
    "EXACT_OVER_BUDGET",
    "MATRIX",
    "Hit",
    "PassageSpan",
    "SearchFilters",
    "SearchResult",
    "forget_caches",
    "highlights_data",
    "items_naming",
    "reference_status",
    "search",
]
