"""ContextForge's benchmarks (``python -m bench``; bench/__main__.py says what each measures)."""

from __future__ import annotations

import os


def migrated_django() -> None:
    """Django set up in a benchmark's own process, on the database its DATABASE_URL names, migrated."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
