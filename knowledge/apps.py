from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"

    def ready(self) -> None:
        from knowledge import receivers  # noqa: F401  (connects them)
