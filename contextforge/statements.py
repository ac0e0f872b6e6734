"""Hot reads in SQL written once per process, their rows made model instances as the ORM makes them.

The ORM compiles a query each time it runs: ~0.3 ms for a join, twice that right after the embedding
model has swept the CPU caches. An API search reads its key, its projects, its live paths and its
hits on every call, so those statements are written once, from the models' own metadata, with the
helpers here.
"""

from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, models


def select_list(model: type[models.Model], alias: str, *, exclude=()) -> tuple[tuple[str, ...], str]:
    """The attribute names of ``model``'s concrete fields but ``exclude``, and their SQL select list."""
    fields = [f for f in model._meta.concrete_fields if f.name not in exclude]
    quote = connection.ops.quote_name
    return tuple(f.attname for f in fields), ", ".join(f"{alias}.{quote(f.column)}" for f in fields)


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def instance(model: type[models.Model], names: tuple[str, ...], values) -> models.Model:
    """A ``model`` built from one row's ``values`` for ``names``, as a queryset builds it."""
    values = list(values)
    for n, convert in _converters(model, names):
        values[n] = convert(values[n], None, connection)
    return model.from_db(DEFAULT_DB_ALIAS, names, values)


@cache
def _converters(model: type[models.Model], names: tuple[str, ...]) -> list[tuple[int, object]]:
    fields = (model._meta.get_field(name) for name in names)
    return [(n, f.from_db_value) for n, f in enumerate(fields) if hasattr(f, "from_db_value")]
