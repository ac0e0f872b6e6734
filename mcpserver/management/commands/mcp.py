from __future__ import annotations

import os
import threading

from django.core.management.base import BaseCommand, CommandError
from rest_framework import exceptions as drf_exceptions

from contextforge.api import ApplicationError
from knowledge import embeddings
from mcpserver.access import Caller, authenticate, readable_projects

KEY_ENV = "CONTEXTFORGE_API_KEY"


class Command(BaseCommand):
    help = (
        f"Serve ContextForge's MCP tools to AI coding agents over stdio (the API key comes from {KEY_ENV}). "
        "The web server of manage.py serve speaks MCP's streamable HTTP at /mcp too."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--project",
            help="Slug of the project to act in. Default: the key's own project; for a key that reaches "
            "several, reads span them all and writes need this option.",
        )

    def handle(self, *args, project, **options):
        self._serve_stdio(project)

    def _warm_model(self) -> None:
        # Loading the model takes seconds: start now, so the first query waits for less of it.
        def load() -> None:
            try:
                embeddings.get_model()
            except embeddings.EmbeddingUnavailable:
                pass  # each query reports it; items are saved as pending meanwhile

        threading.Thread(target=load, name="warm-embedding-model", daemon=True).start()

    def _serve_stdio(self, project: str | None) -> None:
        from mcpserver.server import build_server

        secret = os.environ.get(KEY_ENV, "")
        # Fail at start, not at the agent's first call, when the key or the project is wrong.
        try:
            key = authenticate(secret)
            readable_projects(Caller(key=key, project_slug=project))
        except drf_exceptions.APIException as exc:
            raise CommandError(f"{exc.detail} ({KEY_ENV})") from None
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        where = project or (key.project.slug if key.project_id else "every project of the key's owner")
        # stdout carries the protocol: everything for people goes to stderr.
        self.stderr.write(
            f"ContextForge MCP on stdio: key {key.prefix}… ({','.join(key.scopes)}), project: {where}"
        )
        self._warm_model()

        def caller_for(ctx) -> Caller:
            # Checked on every call, so a key revoked mid-session stops working at once.
            return Caller(key=authenticate(secret), project_slug=project)

        build_server(caller_for=caller_for).run("stdio")
