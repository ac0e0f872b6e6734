from django.core.management.base import BaseCommand, CommandError

from contextforge import backup


class Command(BaseCommand):
    help = (
        "Restore a backup file into an empty database and the data directory. Every checksum and the schema "
        "version are checked before anything is touched; a non-empty database is refused without --force."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--force", action="store_true", help="replace a database that is not empty")

    def handle(self, *args, file, force=False, **options):
        try:
            manifest = backup.restore(file, force=force)
        except backup.BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"restored {file} (taken {manifest['created']})")
        if manifest.get("secret_key") == "environment":
            self.stdout.write("the backup's secret key came from DJANGO_SECRET_KEY: set the same one here")
