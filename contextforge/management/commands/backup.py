from django.core.management.base import BaseCommand, CommandError

from contextforge import backup


class Command(BaseCommand):
    help = (
        "Write a backup (the database's pg_dump, the data directory's secret key, a manifest with checksums) "
        "into CONTEXTFORGE_BACKUP_DIR and keep the CONTEXTFORGE_BACKUP_KEEP newest."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dir", help="write here instead of CONTEXTFORGE_BACKUP_DIR")
        parser.add_argument(
            "--keep", type=int, help="keep this many newest backups (default CONTEXTFORGE_BACKUP_KEEP)"
        )

    def handle(self, *args, dir=None, keep=None, **options):
        try:
            path = backup.create(directory=dir)
        except backup.BackupError as exc:
            raise CommandError(str(exc)) from None
        for old in backup.prune(directory=path.parent, keep=keep):
            self.stdout.write(f"deleted {old}")
        self.stdout.write(str(path))
