"""Verdicts bound to the summary they judged (issue 16, SPEC §11).

Every review written without its generation is bound to the generation its
job had when the review was written (a generation made at or before the
review). A review written while its job had no summary judged nothing and
keeps ``generation`` null: it stays as history and never stands. Also the
review queue's claim table and the indexes its reads use."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def bind_reviews_to_generations(apps, schema_editor):
    Review = apps.get_model("compaction", "Review")
    SummaryGeneration = apps.get_model("compaction", "SummaryGeneration")
    had_then = SummaryGeneration.objects.filter(job_id=OuterRef("job_id"), created_at__lte=OuterRef("created_at"))
    (Review.objects.filter(generation__isnull=True)
     .annotate(had=Subquery(had_then.values("pk")[:1]))
     .filter(had__isnull=False)
     .update(generation_id=Subquery(had_then.values("pk")[:1])))


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0014_handoff_prompt_version'),
        ('conversations', '0003_fewer_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ReviewClaim',
            fields=[
                ('generation', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='review_claim', serialize=False, to='compaction.summarygeneration')),
                ('token', models.CharField(max_length=32)),
                ('expires_at', models.DateTimeField()),
            ],
        ),
        migrations.AddIndex(
            model_name='review',
            index=models.Index(fields=['generation', '-created_at'], name='review_generation_latest'),
        ),
        migrations.AddIndex(
            model_name='summarygeneration',
            index=models.Index(fields=['created_at', 'id'], name='generation_created'),
        ),
        migrations.AddField(
            model_name='reviewclaim',
            name='reviewer',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='review_claims', to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(bind_reviews_to_generations, migrations.RunPython.noop, elidable=False),
    ]
