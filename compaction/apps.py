from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = "Compaction"

    def ready(self):
        from conversations import hooks

        from . import tasks  # noqa: F401 - registers the Celery tasks, which are sent by name
        from .listener import CompactionListener

        # Ingest tells compaction what changed through this one hook (issue 10).
        hooks.listen(CompactionListener())
