# Indexes the audit export reads through (issue 17): one scope in the export's order.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0016_drift_findings'),
        ('conversations', '0003_fewer_indexes'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='compactionjob',
            index=models.Index(fields=['scope', 'created_at', 'id'], name='job_scope_created'),
        ),
    ]
