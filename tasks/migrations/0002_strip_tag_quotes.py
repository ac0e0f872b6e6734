"""Drop the quotes that the old tag input let into tasks' tags: '"ops"' is the tag ops."""

from django.db import migrations

QUOTES = str.maketrans("", "", "\"'`“”‘’«»")


def normalize(tag: str) -> str:
    # As knowledge.models.normalize_tag, frozen here: a migration must not change when the code does.
    return tag.translate(QUOTES).strip().lower()


def strip_quotes(apps, schema_editor):
    Task = apps.get_model("tasks", "Task")
    changed = []
    for task in Task.objects.only("id", "tags").iterator(chunk_size=2000):
        tags = list(dict.fromkeys(t for t in map(normalize, task.tags) if t))
        if tags != task.tags:
            task.tags = tags
            changed.append(task)
    Task.objects.bulk_update(changed, ["tags"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [("tasks", "0001_initial")]

    operations = [migrations.RunPython(strip_quotes, migrations.RunPython.noop)]
