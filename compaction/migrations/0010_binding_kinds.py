"""Jobs and generations name their binding kind, and may be bound to a
parent generation (issue 10; SPEC §7 next).

``kind`` says which binding (``compaction.bindings``) a job belongs to;
every existing job and generation is a fixed 10-pair segment, the default
(also a database default, so rows written by raw SQL or COPY stay valid).
``parent_generation`` / ``parent`` and ``parent_digest`` are empty for
segments. The binding stays unique: two partial constraints, because NULLs
are distinct in a unique index — one without a parent, one with it. The
attempt limit of a new job is read from COMPACTION_MAX_ATTEMPTS.
"""

import compaction.models.jobs
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0009_not_plain_text_failure_code'),
        ('conversations', '0003_fewer_indexes'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='compactionjob',
            name='job_binding_unique',
        ),
        migrations.AddField(
            model_name='compactionjob',
            name='kind',
            field=models.CharField(db_default='segment', default='segment', max_length=30),
        ),
        migrations.AddField(
            model_name='compactionjob',
            name='parent_digest',
            field=models.CharField(blank=True, db_default='', default='', max_length=64),
        ),
        migrations.AddField(
            model_name='compactionjob',
            name='parent_generation',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='child_jobs', to='compaction.summarygeneration'),
        ),
        migrations.AddField(
            model_name='summarygeneration',
            name='kind',
            field=models.CharField(db_default='segment', default='segment', max_length=30),
        ),
        migrations.AddField(
            model_name='summarygeneration',
            name='parent',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='children', to='compaction.summarygeneration'),
        ),
        migrations.AddField(
            model_name='summarygeneration',
            name='parent_digest',
            field=models.CharField(blank=True, db_default='', default='', max_length=64),
        ),
        migrations.AlterField(
            model_name='compactionjob',
            name='max_attempts',
            field=models.PositiveIntegerField(default=compaction.models.jobs.attempt_limit),
        ),
        migrations.AddConstraint(
            model_name='compactionjob',
            constraint=models.UniqueConstraint(condition=models.Q(('parent_generation__isnull', True)), fields=('conversation', 'from_pair', 'to_pair', 'prompt_version', 'model_id', 'source_digest', 'kind'), name='job_binding_unique'),
        ),
        migrations.AddConstraint(
            model_name='compactionjob',
            constraint=models.UniqueConstraint(condition=models.Q(('parent_generation__isnull', False)), fields=('conversation', 'parent_generation', 'from_pair', 'to_pair', 'prompt_version', 'model_id', 'source_digest', 'kind'), name='job_binding_parent_unique'),
        ),
    ]
