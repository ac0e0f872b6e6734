from django.db import migrations
from django.db.models import Max


def start_counters_at_the_last_number(apps, schema_editor):
    Project = apps.get_model("accounts", "Project")
    Task = apps.get_model("tasks", "Task")
    for row in Task.objects.values("project").annotate(last=Max("number")):
        Project.objects.filter(pk=row["project"]).update(last_task_number=row["last"])


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0003_project_last_task_number'),
        ('tasks', '0002_strip_tag_quotes'),
    ]

    operations = [
        migrations.RunPython(start_counters_at_the_last_number, migrations.RunPython.noop),
    ]
