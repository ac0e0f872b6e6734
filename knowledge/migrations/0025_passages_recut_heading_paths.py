"""Items of more than one passage are cut again: a passage after the first now embeds the path of the
headings it starts under (knowledge.passages.inputs).

Marked as not cut, each keeps the passages it has, and stays searchable by them, until the background
re-cut (knowledge.tasks.cut_passages, run by beat) embeds it anew. The item rows' ``passages_cut`` is
written, so their version changes and in-memory copies read them again then.
"""

from django.db import migrations

FORWARD = """
UPDATE knowledge_knowledgeitem SET passages_cut = false
WHERE id IN (SELECT item_id FROM knowledge_passage GROUP BY item_id HAVING count(*) > 1)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0024_item_pending_index"),
    ]

    operations = [
        migrations.RunSQL(FORWARD, migrations.RunSQL.noop),
    ]
