# Indexes the audit export reads through (issue 17): one scope, or one state of one scope, in the export's order.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0016_drift_findings'),
        ('conversations', '0003_fewer_indexes'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='compactionjob',
            name='job_scope_state',
        ),
        migrations.AddIndex(
            model_name='compactionjob',
            index=models.Index(fields=['scope', 'created_at', 'id'], name='job_scope_created'),
        ),
        migrations.AddIndex(
            model_name='compactionjob',
            index=models.Index(fields=['scope', 'state', 'created_at', 'id'], name='job_scope_state_created'),
        ),
    ]
