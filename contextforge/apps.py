from django.apps import AppConfig


class ContextForgeConfig(AppConfig):
    name = "contextforge"
    verbose_name = "ContextForge"

    def ready(self) -> None:
        from contextforge import redaction

        redaction.install()
        from contextforge.api import schema  # noqa: F401  (registers the schema extension)
