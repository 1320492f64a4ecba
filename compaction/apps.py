from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = "Compaction"

    def ready(self):
        from conversations import hooks

        from . import bindings, tasks  # noqa: F401 - tasks: registers the Celery tasks, which are sent by name
        from .bindings.segments import SEGMENTS
        from .listener import CompactionListener

        # The default binding kind (SPEC §5); others register the same way.
        bindings.register(SEGMENTS)
        # Ingest tells compaction what changed through this one hook (issue 10).
        hooks.listen(CompactionListener())
