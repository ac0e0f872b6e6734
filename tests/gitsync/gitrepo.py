"""Real git repositories made by the tests, with commits dated where the test needs them."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path


class GitRepo:
    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "dev@example.com")
        self.git("config", "user.name", "Dev")

    def git(self, *args: str, env: dict | None = None) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=self.path,
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        ).stdout.strip()

    def commit(self, message: str, files: dict[str, str], *, days_ago: float = 0) -> str:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            self.git("add", name)
        return self._commit(message, days_ago)

    def rename(self, old: str, new: str, *, days_ago: float = 0) -> str:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)
        return self._commit(f"Move {old} to {new}", days_ago)

    def delete(self, *names: str, days_ago: float = 0) -> str:
        self.git("rm", "-q", *names)
        return self._commit(f"Delete {', '.join(names)}", days_ago)

    def merge(self, branch: str, *, days_ago: float = 0) -> str:
        """Merge ``branch`` into the checked-out branch with a merge commit (--no-ff), dated ``days_ago``."""
        self.git("merge", "-q", "--no-ff", "-m", f"Merge {branch}", branch, env=self._dated(days_ago))
        return self.git("rev-parse", "HEAD")

    def _commit(self, message: str, days_ago: float) -> str:
        self.git("commit", "-q", "-m", message, env=self._dated(days_ago))
        return self.git("rev-parse", "HEAD")

    @staticmethod
    def _dated(days_ago: float) -> dict[str, str]:
        stamp = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def count(self, *args: str) -> int:
        return int(self.git("rev-list", "--count", *args, "main"))
