"""Passages: an item is embedded as one or more windows of its content (knowledge/passages.py).

Existing items get ``passages_cut`` False (the column is added with that default, then the model's
default becomes True for new rows): 0016 gives each embedded item one passage from its current vector,
and the background re-cut (knowledge.tasks.cut_passages) cuts and embeds the long ones.
"""

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_invitation"),
        ("knowledge", "0014_search_vector_gin_without_pending_list"),
    ]

    operations = [
        migrations.CreateModel(
            name="Passage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("ordinal", models.PositiveIntegerField()),
                ("start", models.PositiveIntegerField()),
                ("end", models.PositiveIntegerField()),
                ("embedding", pgvector.django.vector.VectorField(dimensions=384)),
                (
                    "item",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="passages",
                        to="knowledge.knowledgeitem",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.project",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["project", "item"], name="passage_project_item")],
                "constraints": [models.UniqueConstraint(fields=("item", "ordinal"), name="passage_item_ordinal")],
            },
        ),
        # Rows already there are not cut yet; rows written from now on are cut as they are embedded.
        migrations.AddField(
            model_name="knowledgeitem",
            name="passages_cut",
            field=models.BooleanField(default=False, editable=False),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="knowledgeitem",
            name="passages_cut",
            field=models.BooleanField(default=True, db_default=True, editable=False),
        ),
        migrations.AddIndex(
            model_name="knowledgeitem",
            index=models.Index(condition=models.Q(("passages_cut", False)), fields=["id"], name="item_passages_uncut"),
        ),
    ]
