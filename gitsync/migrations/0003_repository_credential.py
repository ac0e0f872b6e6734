import shutil

from django.db import migrations, models

from gitsync.services import clone_path
from gitsync.sources import redact, split_credential


def move_credentials_out_of_urls(apps, schema_editor):
    Repository = apps.get_model("gitsync", "Repository")
    for repository in Repository.objects.all():
        url, credential = split_credential(repository.url)
        if credential or repository.last_error != redact(repository.last_error):
            # The clone made from the old URL keeps it, credential included, in its config.
            shutil.rmtree(clone_path(repository), ignore_errors=True)
            repository.url = url
            repository.credential = repository.credential or credential
            repository.last_error = redact(repository.last_error, credential)
            repository.save(update_fields=["url", "credential", "last_error"])


class Migration(migrations.Migration):
    dependencies = [
        ("gitsync", "0002_drop_unused_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="repository",
            name="credential",
            field=models.CharField(
                blank=True,
                help_text="user:token or a token for an https remote; never shown once saved.",
                max_length=1000,
                verbose_name="credential",
            ),
        ),
        migrations.RunPython(move_credentials_out_of_urls, migrations.RunPython.noop),
    ]
