"""Title search on the desk (``title__icontains``) compiles to
``UPPER(title) LIKE UPPER(%s)``; a trigram GIN index on ``UPPER(title)``
serves it without scanning every conversation. PostgreSQL only; where the
``pg_trgm`` extension cannot be created (no privilege), the index is skipped
and search still works, only slower."""

from django.db import migrations


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            try:
                cursor.execute("SAVEPOINT trgm")
                cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                cursor.execute("RELEASE SAVEPOINT trgm")
            except Exception:  # no privilege: search falls back to a scan
                cursor.execute("ROLLBACK TO SAVEPOINT trgm")
                return
        cursor.execute(
            "CREATE INDEX IF NOT EXISTS conversation_title_trgm "
            "ON conversations_conversation USING gin (UPPER(title) gin_trgm_ops)"
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS conversation_title_trgm")


class Migration(migrations.Migration):
    dependencies = [("conversations", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
