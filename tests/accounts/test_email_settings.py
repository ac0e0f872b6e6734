"""Where password-reset mail goes: the console by default, an SMTP server named by DJANGO_EMAIL_URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings

READ = (
    "import json, django; from django.conf import settings; django.setup(); "
    "print(json.dumps([settings.EMAIL_BACKEND, settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS]))"
)


def settings_with(email_url: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_EMAIL_URL"}
    env["DJANGO_SETTINGS_MODULE"] = "contextforge.settings"
    if email_url is not None:
        env["DJANGO_EMAIL_URL"] = email_url
    return subprocess.run(
        [sys.executable, "-c", READ],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_mail_is_printed_on_the_console_unless_an_smtp_url_is_given():
    default = settings_with(None)
    assert json.loads(default.stdout.splitlines()[-1])[0] == "django.core.mail.backends.console.EmailBackend"
    smtp = settings_with("smtp://mailer:secret@mail.example.org:587/?tls=True")
    assert json.loads(smtp.stdout.splitlines()[-1]) == [
        "django.core.mail.backends.smtp.EmailBackend",
        "mail.example.org",
        587,
        True,
    ]


def test_a_malformed_email_url_stops_the_process_naming_the_variable():
    answer = settings_with("smtp://mailer:secret@mail.example.org:notaport/")
    assert answer.returncode != 0 and "DJANGO_EMAIL_URL" in answer.stderr
