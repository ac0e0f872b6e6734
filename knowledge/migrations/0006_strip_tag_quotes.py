"""Drop the quotes that the old tag input let into stored tags: '"ops"' is the tag ops."""

from django.db import migrations

QUOTES = str.maketrans("", "", "\"'`“”‘’«»")


def normalize(tag: str) -> str:
    # As knowledge.models.normalize_tag, frozen here: a migration must not change when the code does.
    return tag.translate(QUOTES).strip().lower()


def strip_quotes(apps, schema_editor):
    KnowledgeItem = apps.get_model("knowledge", "KnowledgeItem")
    changed = []
    for item in KnowledgeItem.objects.only("id", "tags").iterator(chunk_size=2000):
        tags = list(dict.fromkeys(t for t in map(normalize, item.tags) if t))
        if tags != item.tags:
            item.tags = tags
            changed.append(item)
    KnowledgeItem.objects.bulk_update(changed, ["tags"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0005_normalize_tags")]

    operations = [migrations.RunPython(strip_quotes, migrations.RunPython.noop)]
