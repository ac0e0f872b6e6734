from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_project_description_and_task_prefix'),
    ]

    operations = [
        migrations.AddField(
            model_name='project',
            name='last_task_number',
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
    ]
