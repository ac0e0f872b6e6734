from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Outbound webhooks"

    def ready(self) -> None:
        from webhooks import receivers  # noqa: F401  (connects them)
