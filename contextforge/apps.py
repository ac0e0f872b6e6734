from django.apps import AppConfig


class ContextForgeConfig(AppConfig):
    name = "contextforge"
    verbose_name = "ContextForge"

    def ready(self) -> None:
        from contextforge import redaction

        redaction.install()
