from django.apps import AppConfig


class GitsyncConfig(AppConfig):
    name = "gitsync"
    verbose_name = "Git integration"
