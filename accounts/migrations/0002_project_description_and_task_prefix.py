import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='project',
            name='description',
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name='project',
            name='task_prefix',
            field=models.CharField(default='CF', max_length=10, validators=[django.core.validators.RegexValidator('^[A-Z][A-Z0-9]{0,9}\\Z', 'A task-id prefix is 1 to 10 capital letters or digits, starting with a letter.')]),
        ),
    ]
