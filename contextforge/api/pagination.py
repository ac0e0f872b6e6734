"""Pagination of every API list."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import pagination
from rest_framework.request import Request

from contextforge.api.exceptions import ApplicationError

MAX_PAGE_SIZE = 500
NOT_A_COUNT = _("Must be a whole number of at least {min}.")


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    """``?limit=&offset=``; a limit above MAX_PAGE_SIZE reads MAX_PAGE_SIZE, an offset past the end an
    empty page, whatever their size. A limit or offset that is not a whole number (``offset=null``,
    ``limit=-1``, an empty one) is a 400 naming it, as the schema says."""

    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request: Request) -> int | None:
        if self.limit_query_param in request.query_params:
            count(request, self.limit_query_param, minimum=1)
        return super().get_limit(request)

    def get_offset(self, request: Request) -> int:
        if self.offset_query_param in request.query_params:
            return count(request, self.offset_query_param, minimum=0)
        return 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1 if parameter["name"] == self.limit_query_param else 0
        return parameters


def count(request: Request, name: str, *, minimum: int) -> int:
    value = request.query_params.get(name, "")
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise ApplicationError(NOT_A_COUNT.format(min=minimum), field=name)
    return int(value)
