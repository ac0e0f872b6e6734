import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextforge.settings")

app = Celery("contextforge")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
