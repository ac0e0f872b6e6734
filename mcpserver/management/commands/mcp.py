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
        "Serve ContextForge's MCP tools to AI coding agents: over stdio (the default; the API key comes "
        f"from {KEY_ENV}) or, with --http, as streamable HTTP at /mcp (Bearer API keys)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--project",
            help="Slug of the project to act in. Default: the key's own project; for a key that reaches "
            "several, reads span them all and writes need this option. Over HTTP, clients pass "
            "?project=SLUG on the URL instead.",
        )
        parser.add_argument("--http", action="store_true", help="Serve streamable HTTP instead of stdio.")
        parser.add_argument("--host", default="127.0.0.1", help="Address to listen on with --http.")
        parser.add_argument("--port", type=int, default=8001, help="Port to listen on with --http.")
        parser.add_argument(
            "--mcp-only",
            action="store_true",
            help="With --http, serve only /mcp; by default the dashboard and REST API answer on the same port.",
        )

    def handle(self, *args, project, http, host, port, mcp_only, **options):
        if http:
            if project:
                raise CommandError("--project is for stdio; HTTP clients add ?project=SLUG to the URL.")
            self._serve_http(host=host, port=port, serve_django=not mcp_only)
        else:
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

    def _serve_http(self, *, host: str, port: int, serve_django: bool) -> None:
        import uvicorn

        from mcpserver.http import MCP_PATH, build_application

        app = build_application(serve_django=serve_django)
        self.stdout.write(f"ContextForge MCP (streamable HTTP) on http://{host}:{port}{MCP_PATH}")
        self._warm_model()
        uvicorn.run(app, host=host, port=port, log_level="info", lifespan="on")
