from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _create_cache_table(sender, using="default", **kwargs):
    """The database cache's table (settings.CACHES, when no Redis is
    configured) is made by ``migrate`` itself, so no deployment step can be
    forgotten; ``createcachetable`` does nothing when it exists."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)


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
        post_migrate.connect(_create_cache_table, sender=self, dispatch_uid="compaction-cache-table")
