"""Store every tag stripped and lowercased, as items are now saved: "Test" and "test " are the test tag."""

from django.db import migrations


def normalize(tag: str) -> str:
    # As knowledge.models.normalize_tag, frozen here: a migration must not change when the code does.
    return tag.strip().lower()


def normalize_tags(apps, schema_editor):
    KnowledgeItem = apps.get_model("knowledge", "KnowledgeItem")
    changed = []
    for item in KnowledgeItem.objects.only("id", "tags").iterator(chunk_size=2000):
        tags = list(dict.fromkeys(t for t in map(normalize, item.tags) if t))
        if tags != item.tags:
            item.tags = tags
            changed.append(item)
        if len(changed) >= 1000:
            KnowledgeItem.objects.bulk_update(changed, ["tags"])
            changed = []
    KnowledgeItem.objects.bulk_update(changed, ["tags"])


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0004_drop_hnsw_index")]

    operations = [migrations.RunPython(normalize_tags, migrations.RunPython.noop)]
