"""The rolling hand-off policy (issue 13; SPEC §7): a scope's policy and
thresholds (``ScopePolicy``; a scope without a row keeps segments), what
the hand-off binding keeps beside its jobs (``HandoffPlan``: why planned,
the material's current digest, where the chain broke), each rolling
conversation's last trigger decision (``HandoffCheck``), per-message token
counts (``MessageTokens``), and the new failure code ``malformed_note``.
Numbered 0013 on top of 0010: the lead re-chains at merge.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0012_attempt_infrastructure_outcome'),
        ('conversations', '0003_fewer_indexes'),
    ]

    operations = [
        migrations.CreateModel(
            name='MessageTokens',
            fields=[
                ('message', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='+', serialize=False, to='conversations.message')),
                ('revision', models.PositiveIntegerField()),
                ('tokens', models.PositiveIntegerField()),
            ],
        ),
        migrations.CreateModel(
            name='ScopePolicy',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scope', models.CharField(max_length=100, unique=True)),
                ('policy', models.CharField(choices=[('segments', 'Segments'), ('rolling', 'Rolling')], default='segments', max_length=20)),
                ('recent_turns', models.PositiveIntegerField(default=6)),
                ('min_new_token_count', models.PositiveIntegerField(default=20000)),
                ('context_window_tokens', models.PositiveIntegerField(default=96000)),
                ('trigger_ratio', models.FloatField(default=0.72)),
                ('min_new_message_count', models.PositiveIntegerField(default=8)),
                ('min_compact_message_count', models.PositiveIntegerField(default=10)),
                ('max_compaction_batch_messages', models.PositiveIntegerField(default=200)),
                ('max_rounds_per_request', models.PositiveIntegerField(default=30)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'verbose_name_plural': 'scope policies',
            },
        ),
        migrations.AlterField(
            model_name='attempt',
            name='failure_code',
            field=models.CharField(blank=True, choices=[('tool_calls', 'Tool Calls'), ('finish_reason', 'Finish Reason'), ('empty', 'Empty'), ('not_plain_text', 'Not Plain Text'), ('too_long', 'Too Long'), ('provider_error', 'Provider Error'), ('timeout', 'Timeout'), ('source_changed', 'Source Changed'), ('lease_expired', 'Lease Expired'), ('malformed_note', 'Malformed Note'), ('unstorable_text', 'Unstorable Text')], default='', max_length=30),
        ),
        migrations.AlterField(
            model_name='compactionjob',
            name='last_failure_code',
            field=models.CharField(blank=True, choices=[('tool_calls', 'Tool Calls'), ('finish_reason', 'Finish Reason'), ('empty', 'Empty'), ('not_plain_text', 'Not Plain Text'), ('too_long', 'Too Long'), ('provider_error', 'Provider Error'), ('timeout', 'Timeout'), ('source_changed', 'Source Changed'), ('lease_expired', 'Lease Expired'), ('malformed_note', 'Malformed Note'), ('unstorable_text', 'Unstorable Text')], default='', max_length=30),
        ),
        migrations.CreateModel(
            name='HandoffCheck',
            fields=[
                ('conversation', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='handoff_check', serialize=False, to='conversations.conversation')),
                ('pair_count', models.PositiveIntegerField(default=0)),
                ('decision', models.CharField(blank=True, default='', max_length=40)),
                ('material_messages', models.PositiveIntegerField(default=0)),
                ('material_tokens', models.PositiveIntegerField(default=0)),
                ('estimate_tokens', models.PositiveIntegerField(default=0)),
                ('checked_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='compaction.summarygeneration')),
            ],
        ),
        migrations.CreateModel(
            name='HandoffPlan',
            fields=[
                ('job', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='handoff', serialize=False, to='compaction.compactionjob')),
                ('round', models.PositiveIntegerField(default=1)),
                ('trigger', models.CharField(default='plan', max_length=20)),
                ('reason', models.CharField(max_length=40)),
                ('material_messages', models.PositiveIntegerField(default=0)),
                ('material_tokens', models.PositiveIntegerField(default=0)),
                ('estimate_tokens', models.PositiveIntegerField(default=0)),
                ('current_digest', models.CharField(blank=True, default='', max_length=64)),
                ('note_tokens', models.PositiveIntegerField(blank=True, null=True)),
                ('break_pair', models.PositiveIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('break_generation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='compaction.summarygeneration')),
            ],
        ),
    ]
