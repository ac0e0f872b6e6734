from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from gitsync import services
from gitsync.models import Repository


class Command(BaseCommand):
    help = "Sync connected repositories: fetch them and ingest their new commits. Exits 1 if any failed."

    def add_arguments(self, parser):
        parser.add_argument("--repo", help="Only the repository with this name (in any project).")
        parser.add_argument(
            "--full", action="store_true", help="Ingest the whole history, not just the horizon."
        )

    def handle(self, *args, repo, full, **options):
        repositories = Repository.objects.filter(enabled=True).select_related("project").order_by("id")
        if repo:
            repositories = repositories.filter(name=repo)
            if not repositories.exists():
                raise CommandError(f"No enabled repository named {repo!r}.")
        failed = 0
        total = repositories.count()
        for n, repository in enumerate(repositories, start=1):
            self.stdout.write(f"[{n}/{total}] {repository.project.slug}/{repository.name} … ", ending="")
            self.stdout.flush()
            started = time.perf_counter()
            report = services.repository_sync(repository=repository, full=full)
            seconds = time.perf_counter() - started
            if report.status == "failed":
                failed += 1
                self.stdout.write(self.style.ERROR(f"failed: {report.message}"))
            elif report.status == "skipped":
                self.stdout.write(self.style.WARNING(f"skipped: {report.message}"))
            else:
                self.stdout.write(
                    self.style.SUCCESS(
                        f"+{report.added} commits, -{report.removed} gone, head {report.head[:10]}"
                    )
                    + f" ({seconds:.1f} s)"
                )
        self.stdout.write(f"{total} repositories: {total - failed} ok, {failed} failed.")
        if failed:
            raise SystemExit(1)
