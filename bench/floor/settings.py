"""The project's settings with the floor's URLs (two empty API views beside every real one)."""

from contextforge.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor.urls"
