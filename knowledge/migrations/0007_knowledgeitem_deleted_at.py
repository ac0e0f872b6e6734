from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0006_strip_tag_quotes'),
    ]

    operations = [
        migrations.AddField(
            model_name='knowledgeitem',
            name='deleted_at',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
    ]
