"""PostgreSQL refuses template edits of a frozen prompt version (SPEC §5).

A prompt version is frozen when a job first uses it; from then on its name,
templates and input kind can never change (a changed prompt is a new
version) and it can never be unfrozen. The ORM refuses the same on every
database (``PromptVersion.save``).
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION compaction_prompt_frozen() RETURNS trigger AS $$
BEGIN
    IF OLD.frozen_at IS NOT NULL AND (
        NEW.frozen_at IS NULL
        OR NEW.name IS DISTINCT FROM OLD.name
        OR NEW.family IS DISTINCT FROM OLD.family
        OR NEW.version IS DISTINCT FROM OLD.version
        OR NEW.system_template IS DISTINCT FROM OLD.system_template
        OR NEW.user_template IS DISTINCT FROM OLD.user_template
        OR NEW.includes_user_text IS DISTINCT FROM OLD.includes_user_text
    ) THEN
        RAISE EXCEPTION 'prompt version % is frozen', OLD.name
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS compaction_prompt_frozen ON compaction_promptversion;
CREATE TRIGGER compaction_prompt_frozen
    BEFORE UPDATE ON compaction_promptversion
    FOR EACH ROW EXECUTE FUNCTION compaction_prompt_frozen();
"""

DROP = """
DROP TRIGGER IF EXISTS compaction_prompt_frozen ON compaction_promptversion;
DROP FUNCTION IF EXISTS compaction_prompt_frozen();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("compaction", "0005_role_groups")]
    operations = [migrations.RunPython(forwards, backwards)]
