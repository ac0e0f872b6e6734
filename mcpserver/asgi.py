"""ASGI entry point: the whole app (Django) plus streamable HTTP MCP at /mcp.

``uvicorn mcpserver.asgi:application``; ``python manage.py mcp --http`` does the same.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")
django.setup()

from mcpserver.http import build_application  # noqa: E402  (needs Django set up)

application = build_application()
