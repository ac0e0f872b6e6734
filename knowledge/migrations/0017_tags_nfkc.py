"""Tags in NFKC form without invisible format characters: a tag typed 'te\u200bst' is the test tag."""

import unicodedata

from django.db import migrations

QUOTES = str.maketrans("", "", "\"'`“”‘’«»")
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def normalize(tag: str) -> str:
    # As knowledge.models.normalize_tag, frozen here: a migration must not change when the code does.
    # A stored bidirectional control is dropped too: it can no longer be stored, and is not kept.
    tag = unicodedata.normalize("NFKC", tag)
    tag = "".join(c for c in tag if c not in BIDI_CONTROLS and unicodedata.category(c) != "Cf")
    return tag.translate(QUOTES).strip().lower()


def normalize_tags(apps, schema_editor):
    KnowledgeItem = apps.get_model("knowledge", "KnowledgeItem")
    changed = []
    for item in KnowledgeItem.objects.only("id", "tags").iterator(chunk_size=2000):
        tags = list(dict.fromkeys(t for t in map(normalize, item.tags) if t))
        if tags != item.tags:
            item.tags = tags
            changed.append(item)
    KnowledgeItem.objects.bulk_update(changed, ["tags"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0016_passage_zero")]

    operations = [migrations.RunPython(normalize_tags, migrations.RunPython.noop)]
