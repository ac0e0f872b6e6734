"""The ASGI entry point that ``manage.py serve`` runs: the dashboard, the REST API and MCP's streamable
HTTP at ``/mcp``, on one port (``gunicorn -k uvicorn_worker.UvicornWorker contextforge.asgi``)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
os.environ.setdefault("CONTEXTFORGE_DB_POOL", "true")  # see DATABASES in settings
django.setup()

from mcpserver.http import build_application  # noqa: E402  (needs Django set up)

application = build_application()
