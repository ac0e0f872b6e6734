from django.apps import AppConfig


class ContextForgeConfig(AppConfig):
    name = "contextforge"
    verbose_name = "ContextForge"
