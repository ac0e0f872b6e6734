"""The request floor's server pieces (bench/request_floor.py): settings and URLs that add two empty API
views beside the project's own, and a bare ASGI app."""
