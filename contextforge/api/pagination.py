"""Pagination of every API list."""

from __future__ import annotations

from rest_framework import pagination

MAX_PAGE_SIZE = 500


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    """``?limit=&offset=``; a limit above MAX_PAGE_SIZE reads MAX_PAGE_SIZE, an offset past the end an
    empty page, whatever their size."""

    max_limit = MAX_PAGE_SIZE
