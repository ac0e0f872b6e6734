from knowledge.ranking.search import Hit, SearchFilters, SearchResult, search

__all__ = ["Hit", "SearchFilters", "SearchResult", "search"]
