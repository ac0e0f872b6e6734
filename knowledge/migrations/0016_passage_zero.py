"""Every embedded item gets one passage, its whole content, with the vector it already has.

So every item stays searchable at once, by exactly the vector it had, while the background re-cut
(knowledge.tasks.cut_passages, run by beat) cuts the items longer than one window and embeds their
passages. A plain INSERT ... SELECT: the item rows are not written, so no version changes.
"""

from django.db import migrations

FORWARD = """
INSERT INTO knowledge_passage (item_id, project_id, ordinal, start, "end", embedding)
SELECT id, project_id, 0, 0, length(content), embedding
FROM knowledge_knowledgeitem
WHERE embedding IS NOT NULL
"""


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0015_passage"),
    ]

    operations = [
        migrations.RunSQL(FORWARD, "DELETE FROM knowledge_passage"),
    ]
