from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts import services
from accounts.models import Membership, Project, Role


class Command(BaseCommand):
    help = "Create an API key for USERNAME in a project. The secret is the last line printed."

    def add_arguments(self, parser):
        parser.add_argument("username", help="The key's owner.")
        parser.add_argument("--project", required=True, help="Slug of the project the key is bound to.")
        parser.add_argument("--scopes", default="read,write", help="Comma-separated: read, write, admin.")
        parser.add_argument("--name", default="cli", help="A name to recognise the key by in lists.")
        parser.add_argument(
            "--create",
            action="store_true",
            help="Create the user, the project and an admin membership where missing.",
        )
        parser.add_argument(
            "--agent",
            action="store_true",
            help="An agent's key: what it writes arrives unreviewed, for a person to approve.",
        )

    def handle(self, *args, username, project, scopes, name, create, **options):
        try:
            scopes = services.parse_scopes(scopes)
        except ValidationError as exc:
            raise CommandError(exc.message_dict["scopes"][0]) from None
        with transaction.atomic():
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                if not create:
                    raise CommandError(f"No user {username!r} (use --create to create it).")
                user, _ = services.user_ensure(username=username)
                self.stdout.write(f"Created user {username}.")
            proj = Project.objects.filter(slug=project).first()
            if proj is None:
                if not create:
                    raise CommandError(f"No project {project!r} (use --create to create it).")
                proj = services.project_create(name=project, slug=project)
                self.stdout.write(f"Created project {project}.")
            if not Membership.objects.filter(user=user, project=proj).exists():
                if not create:
                    raise CommandError(f"{username} is not a member of {project} (use --create to add them).")
                services.membership_set(user=user, project=proj, role=Role.ADMIN)
                self.stdout.write(f"Added {username} to {project} as admin.")
            new = services.api_key_create(
                owner=user, name=name, scopes=scopes, project=proj, is_agent=options["agent"]
            )
        self.stdout.write(f"Key {new.key.prefix}… for {username} in {project}, scopes {','.join(scopes)}:")
        self.stdout.write(new.secret)
