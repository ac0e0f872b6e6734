from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts import services
from accounts.models import Project, Role


class Command(BaseCommand):
    help = "Make sure a first admin account and a first project exist, and print how to sign in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin", help="Username of the first admin.")
        parser.add_argument("--project", default="default", help="Slug of the first project.")
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="Where the server answers (printed to sign in)."
        )

    def handle(self, *args, username, project, url, **options):
        User = get_user_model()
        password_file = settings.DATA_DIR / "admin_password"
        if not User.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username, password=password, email="")
            password_file.write_text(password + "\n")
            password_file.chmod(0o600)
            self.stdout.write(self.style.SUCCESS(f"Created the admin account {username!r}."))
        admin = User.objects.filter(is_superuser=True).order_by("id").first()
        proj = Project.objects.filter(slug=project).first() or services.project_create(
            name=project.title(), slug=project
        )
        if not proj.memberships.filter(user=admin).exists():
            services.membership_set(user=admin, project=proj, role=Role.ADMIN)
        hint = password_file.read_text().strip() if password_file.exists() else "(the password you set)"
        self.stdout.write(f"Sign in at {url} as {admin.username} / {hint}")
        self.stdout.write(f"(The first password is kept in {password_file}; change it in the admin.)")
