"""Each item's embedding is kept in its row (storage MAIN) rather than in the table's TOAST relation.

An item's row is larger than PostgreSQL's TOAST threshold with its 1.5 KB vector, so the vector was
moved out of line, and the exact scan of a project (knowledge/ranking) fetched every candidate's vector
through the TOAST index: most of the scan's time. Rows written before this keep their vectors out of
line until they are written again; ``VACUUM FULL knowledge_knowledgeitem`` rewrites them all at once.
"""

from django.db import migrations

TABLE = "knowledge_knowledgeitem"


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0012_import_job"),
    ]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE MAIN",
            f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE EXTENDED",
        ),
    ]
