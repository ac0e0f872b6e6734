"""Make every repository sync its history again under the current rules.

Commits stored before this migration hold no files for merges and no tree of the branch, so the next
sync of each repository (the beat task, or ``manage.py sync_repos``) ingests its branch anew: merges
with the files they changed against their first parent, and the branch's current tree.
"""

from django.db import migrations


def forget_history(apps, schema_editor):
    CommitFile = apps.get_model("gitsync", "CommitFile")
    Commit = apps.get_model("gitsync", "Commit")
    Repository = apps.get_model("gitsync", "Repository")
    CommitFile.objects.all().delete()
    Commit.objects.all().delete()
    Repository.objects.update(last_synced_commit="")


class Migration(migrations.Migration):
    dependencies = [("gitsync", "0005_tree_file")]

    operations = [migrations.RunPython(forget_history, migrations.RunPython.noop)]
