from knowledge.ranking.search import (
    Hit,
    SearchFilters,
    SearchResult,
    forget_caches,
    highlights_data,
    reference_status,
    search,
)

__all__ = [
    "Hit",
    "SearchFilters",
    "SearchResult",
    "forget_caches",
    "highlights_data",
    "reference_status",
    "search",
]
