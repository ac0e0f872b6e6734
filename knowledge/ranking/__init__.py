from knowledge.ranking.search import Hit, SearchFilters, SearchResult, forget_caches, search

__all__ = ["Hit", "SearchFilters", "SearchResult", "forget_caches", "search"]
