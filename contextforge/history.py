"""Who changed what: the context attached to every version the database records (django-pghistory).

A write request's middleware opens the context with its user and channel; the API's authentication
adds the key's name; a service names its action. Versions written outside any context (a shell, a
migration) carry none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pghistory

DASHBOARD, API, MCP, IMPORT, ADMIN = "dashboard", "api", "mcp", "import", "admin"
CHANNELS = (DASHBOARD, API, MCP, IMPORT, ADMIN)
CHANNEL_PREFIXES = (("/api/", API), ("/mcp", MCP), ("/admin/", ADMIN))


def reads_only(view):
    """Mark a view (a function, or a class-based view's class) or an MCP operation that writes nothing
    although it is called by POST, as a search is: no history context is opened for it."""
    view.reads_only = True
    return view


def writes(view) -> bool:
    """Whether ``view`` (what URL resolution gives, or an MCP operation) may write: not marked reads_only."""
    return not getattr(getattr(view, "view_class", view), "reads_only", False)


def channel_of(path: str) -> str:
    return next((channel for prefix, channel in CHANNEL_PREFIXES if path.startswith(prefix)), DASHBOARD)


@contextmanager
def history_context(**metadata) -> Iterator[None]:
    """Attach ``metadata`` to the versions written inside the block, then give back the outer values
    (so an action named for one write does not stick to the next write of the same request)."""
    with pghistory.context() as context:
        saved = dict(context.metadata)
        context.metadata.update(metadata)
        try:
            yield
        finally:
            context.metadata.clear()
            context.metadata.update(saved)


def add_key(key) -> None:
    """Name the API key in the current history context, if a write opened one."""
    pghistory.context(key=key.name)


def carry_context(cursor) -> None:
    """Make the history context hold for the rest of the transaction, for a statement that Django's
    cursor does not run (a COPY on psycopg's own cursor)."""
    # pghistory sets the context, for the transaction, ahead of each statement Django runs that is
    # not a read: this statement is one, and changes nothing else.
    cursor.execute("SET LOCAL pghistory.carried = 'on'")
