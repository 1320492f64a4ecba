"""Issue 12: an attempt an outage ate is logged with outcome
``infrastructure`` (it does not count), and text the database cannot store
is a contract failure of its own, ``unstorable_text``. Choices only: no
column changes. Named 0012 and chained to main's latest migration; the lead
re-chains it at merge if another 0011 lands first.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0010_binding_kinds'),
    ]

    operations = [
        migrations.AlterField(
            model_name='attempt',
            name='failure_code',
            field=models.CharField(blank=True, choices=[('tool_calls', 'Tool Calls'), ('finish_reason', 'Finish Reason'), ('empty', 'Empty'), ('not_plain_text', 'Not Plain Text'), ('too_long', 'Too Long'), ('provider_error', 'Provider Error'), ('timeout', 'Timeout'), ('source_changed', 'Source Changed'), ('lease_expired', 'Lease Expired'), ('unstorable_text', 'Unstorable Text')], default='', max_length=30),
        ),
        migrations.AlterField(
            model_name='attempt',
            name='outcome',
            field=models.CharField(choices=[('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('infrastructure', 'Infrastructure')], default='running', max_length=20),
        ),
        migrations.AlterField(
            model_name='compactionjob',
            name='last_failure_code',
            field=models.CharField(blank=True, choices=[('tool_calls', 'Tool Calls'), ('finish_reason', 'Finish Reason'), ('empty', 'Empty'), ('not_plain_text', 'Not Plain Text'), ('too_long', 'Too Long'), ('provider_error', 'Provider Error'), ('timeout', 'Timeout'), ('source_changed', 'Source Changed'), ('lease_expired', 'Lease Expired'), ('unstorable_text', 'Unstorable Text')], default='', max_length=30),
        ),
    ]
