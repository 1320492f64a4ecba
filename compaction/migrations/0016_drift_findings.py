# A generation's drift report and findings (issue 14; SPEC §8, §11).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0014_handoff_prompt_version'),
    ]

    operations = [
        migrations.CreateModel(
            name='DriftReport',
            fields=[
                ('generation', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='drift_report', serialize=False, to='compaction.summarygeneration')),
                ('finding_count', models.PositiveIntegerField(default=0)),
                ('checked_at', models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.CreateModel(
            name='DriftFinding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField()),
                ('kind', models.CharField(choices=[('wrong', 'Wrong'), ('extra', 'Extra'), ('lost', 'Lost'), ('length', 'Length')], max_length=10)),
                ('code', models.CharField(choices=[('quote_not_verbatim', 'Quote Not Verbatim'), ('retracted_consent', 'Retracted Consent'), ('abandoned_unmarked', 'Abandoned Unmarked'), ('done_without_proof', 'Done Without Proof'), ('tool_detail_in_requests', 'Tool Detail In Requests'), ('question_as_requirement', 'Question As Requirement'), ('assistant_ask_as_todo', 'Assistant Ask As Todo'), ('lost_constraint', 'Lost Constraint'), ('growth_without_new_matters', 'Growth Without New Matters')], max_length=40)),
                ('section', models.CharField(blank=True, max_length=20, null=True)),
                ('line', models.PositiveIntegerField(blank=True, null=True)),
                ('message_ids', models.JSONField(default=list)),
                ('detail', models.TextField(blank=True, default='')),
                ('subject', models.TextField(blank=True, default='')),
                ('generation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='drift_findings', to='compaction.summarygeneration')),
                ('reviews', models.ManyToManyField(blank=True, related_name='cited_findings', to='compaction.review')),
            ],
            options={
                'ordering': ('generation_id', 'position'),
                'indexes': [models.Index(fields=['code', 'generation'], name='drift_finding_code')],
                'constraints': [models.UniqueConstraint(fields=('generation', 'position'), name='drift_finding_position_unique')],
            },
        ),
    ]
