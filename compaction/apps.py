from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = "Compaction"

    def ready(self):
        from conversations import hooks

        from . import bindings, tasks  # noqa: F401 - tasks: registers the Celery tasks, which are sent by name
        from .bindings.handoff import HANDOFF
        from .bindings.segments import SEGMENTS
        from .listener import CompactionListener

        # The default binding kind (SPEC §5), and rolling hand-off notes (SPEC §7).
        bindings.register(SEGMENTS)
        bindings.register(HANDOFF)
        # Ingest tells compaction what changed through this one hook (issue 10).
        hooks.listen(CompactionListener())
