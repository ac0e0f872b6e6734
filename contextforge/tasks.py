"""Celery tasks of the installation itself."""

from __future__ import annotations

import logging

from celery import shared_task

from contextforge import backup

logger = logging.getLogger(__name__)


@shared_task
def backup_nightly() -> str:
    """Write a backup into CONTEXTFORGE_BACKUP_DIR and keep the CONTEXTFORGE_BACKUP_KEEP newest."""
    path = backup.create()
    for old in backup.prune():
        logger.info("backup %s deleted (retention)", old.name)
    logger.info("backup written: %s", path)
    return str(path)
