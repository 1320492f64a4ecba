"""PostgreSQL refuses UPDATE and DELETE on summary generations (SPEC §5).

Every row in ``compaction_summarygeneration`` is a succeeded generation (it
is only written on success), so the trigger refuses any change to any row.
Other databases rely on the ORM guard in ``compaction.models``.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION compaction_generation_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'summary generation % is immutable', OLD.id
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS compaction_generation_immutable ON compaction_summarygeneration;
CREATE TRIGGER compaction_generation_immutable
    BEFORE UPDATE OR DELETE ON compaction_summarygeneration
    FOR EACH ROW EXECUTE FUNCTION compaction_generation_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS compaction_generation_immutable ON compaction_summarygeneration;
DROP FUNCTION IF EXISTS compaction_generation_immutable();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("compaction", "0002_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
