"""Verdicts bound to the summary they judged (issue 16, SPEC §11).

Every review written without its generation is bound to the generation its
job had when the review was written (a generation made at or before the
review). A review written while its job had no summary judged nothing and
keeps ``generation`` null: it stays as history and never stands. Also the
review queue's claim table and the indexes its reads use."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import Exists, OuterRef, Subquery


def bind_reviews_to_generations(apps, schema_editor):
    Review = apps.get_model("compaction", "Review")
    SummaryGeneration = apps.get_model("compaction", "SummaryGeneration")
    had_then = SummaryGeneration.objects.filter(job_id=OuterRef("job_id"), created_at__lte=OuterRef("created_at"))
    (Review.objects.filter(generation__isnull=True)
     .annotate(had=Subquery(had_then.values("pk")[:1]))
     .filter(had__isnull=False)
     .update(generation_id=Subquery(had_then.values("pk")[:1])))


PG_TRIGGERS = """
CREATE OR REPLACE FUNCTION compaction_review_awaiting_add() RETURNS trigger AS $$
BEGIN
    INSERT INTO compaction_reviewawaiting (generation_id, scope, created_at)
    VALUES (NEW.id, NEW.scope, NEW.created_at) ON CONFLICT DO NOTHING;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER compaction_review_awaiting_add AFTER INSERT ON compaction_summarygeneration
    FOR EACH ROW EXECUTE FUNCTION compaction_review_awaiting_add();

CREATE OR REPLACE FUNCTION compaction_review_awaiting_done() RETURNS trigger AS $$
BEGIN
    DELETE FROM compaction_reviewawaiting WHERE generation_id = NEW.generation_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER compaction_review_awaiting_done AFTER INSERT ON compaction_review
    FOR EACH ROW WHEN (NEW.generation_id IS NOT NULL) EXECUTE FUNCTION compaction_review_awaiting_done();
"""

PG_DROP = """
DROP TRIGGER IF EXISTS compaction_review_awaiting_add ON compaction_summarygeneration;
DROP FUNCTION IF EXISTS compaction_review_awaiting_add();
DROP TRIGGER IF EXISTS compaction_review_awaiting_done ON compaction_review;
DROP FUNCTION IF EXISTS compaction_review_awaiting_done();
"""

SQLITE_TRIGGERS = [
    """CREATE TRIGGER compaction_review_awaiting_add AFTER INSERT ON compaction_summarygeneration
       BEGIN INSERT OR IGNORE INTO compaction_reviewawaiting (generation_id, scope, created_at)
             VALUES (NEW.id, NEW.scope, NEW.created_at); END""",
    """CREATE TRIGGER compaction_review_awaiting_done AFTER INSERT ON compaction_review
       WHEN NEW.generation_id IS NOT NULL
       BEGIN DELETE FROM compaction_reviewawaiting WHERE generation_id = NEW.generation_id; END""",
]
SQLITE_DROP = ["DROP TRIGGER IF EXISTS compaction_review_awaiting_add",
               "DROP TRIGGER IF EXISTS compaction_review_awaiting_done"]


def awaiting_fill_and_keep(apps, schema_editor):
    ReviewAwaiting = apps.get_model("compaction", "ReviewAwaiting")
    SummaryGeneration = apps.get_model("compaction", "SummaryGeneration")
    Review = apps.get_model("compaction", "Review")
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        # One statement, an anti-join: NOT IN over every review made this a
        # per-row scan of the review table (hours on a million jobs).
        schema_editor.execute(
            "INSERT INTO compaction_reviewawaiting (generation_id, scope, created_at) "
            "SELECT g.id, g.scope, g.created_at FROM compaction_summarygeneration g "
            "WHERE NOT EXISTS (SELECT 1 FROM compaction_review r WHERE r.generation_id = g.id)", params=None)
    else:
        unreviewed = SummaryGeneration.objects.filter(
            ~Exists(Review.objects.filter(generation_id=OuterRef("pk"))))
        batch = []
        for pk, scope, created_at in unreviewed.values_list("pk", "scope", "created_at").iterator(chunk_size=2000):
            batch.append(ReviewAwaiting(generation_id=pk, scope=scope, created_at=created_at))
            if len(batch) >= 2000:
                ReviewAwaiting.objects.bulk_create(batch)
                batch = []
        ReviewAwaiting.objects.bulk_create(batch)
    if vendor == "postgresql":
        schema_editor.execute(PG_TRIGGERS, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement, params=None)


def awaiting_drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_DROP, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0017_audit_export_indexes'),
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
        migrations.CreateModel(
            name='ReviewAwaiting',
            fields=[
                ('generation', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='awaiting_review', serialize=False, to='compaction.summarygeneration')),
                ('scope', models.CharField(max_length=100)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'indexes': [models.Index(fields=['created_at', 'generation'], name='review_awaiting_order')],
            },
        ),
        migrations.RunPython(awaiting_fill_and_keep, awaiting_drop, elidable=False),
    ]
