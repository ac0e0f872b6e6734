"""`make run` serves where it is told: `PORT=8400 make run`, or a whole address with `BIND=`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent


def planned(*args: str, **env: str) -> list[str]:
    """The commands `make run` would run (make -n runs none of them)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PORT", "BIND")}
    out = subprocess.run(
        ["make", "-n", "run", *args],
        cwd=BASE_DIR,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return [
        line
        for line in out.stdout.splitlines()
        if "manage.py ensure_admin" in line or "manage.py serve" in line
    ]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_run_binds_the_port_or_address_it_is_given_and_says_where_to_sign_in():
    assert planned()[-1].endswith("manage.py serve --bind 127.0.0.1:8000")
    ensure, serve = planned(PORT="8400")
    assert ensure.endswith("ensure_admin --url http://127.0.0.1:8400/")
    assert serve.endswith("serve --bind 127.0.0.1:8400")
    assert planned(BIND="0.0.0.0:9000")[-1].endswith("serve --bind 0.0.0.0:9000")
    assert planned("PORT=8500")[-1].endswith("serve --bind 127.0.0.1:8500")
