"""The Celery app. Configuration comes from Django settings (CELERY_*).

Jobs are acknowledged late and rejected (so redelivered) if their worker is
lost; each worker process takes one message at a time; soft and hard time
limits bound a stuck model call. The scan (``compaction.reap_and_scan``)
runs on the maintenance queue (``COMPACTION_MAINTENANCE_QUEUE``); every
worker that consumes that queue asks for one when it connects and every
``COMPACTION_SCAN_INTERVAL_SECONDS`` (``ScanTimer``), so recovery needs no
scheduler. The beat schedule asks for the same scan, for deployments that
run beat anyway; the scan lock makes the two harmless together.
"""

import logging
import os

from celery import Celery, bootsteps
from celery.signals import worker_init, worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compaction.config.settings")

logger = logging.getLogger(__name__)

app = Celery("compaction")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Read here, not from settings, so beat need not load Django to plan.
SCAN_INTERVAL = float(os.environ.get("COMPACTION_SCAN_INTERVAL_SECONDS") or 15.0)

app.conf.beat_schedule = {
    "compaction-reap-and-scan": {
        "task": "compaction.reap_and_scan",
        "schedule": SCAN_INTERVAL,
        # A scan nobody took within its interval is dropped: a newer one follows.
        "options": {"expires": max(SCAN_INTERVAL, 1.0)},
    },
}


class ScanTimer(bootsteps.StartStopStep):
    """In a worker that consumes the maintenance queue: ask for a scan now —
    at start and after every broker reconnect, when messages may have been
    lost — and then every scan interval (``compaction.engine.scan``)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, c, **kwargs):
        super().__init__(c, **kwargs)
        self.tref = None

    def start(self, c):
        from django.conf import settings

        if settings.COMPACTION_MAINTENANCE_QUEUE not in c.app.amqp.queues.consume_from:
            return
        self.send()
        self.tref = c.timer.call_repeatedly(settings.COMPACTION_SCAN_INTERVAL_SECONDS, self.send)

    def stop(self, c):
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    shutdown = stop

    def send(self):
        from compaction.engine.scan import scan_send

        try:
            scan_send()
        except Exception:  # noqa: BLE001 - the broker is away; the next tick or reconnect asks again
            logger.warning("could not ask for a scan", exc_info=True)


app.steps["consumer"].add(ScanTimer)


@worker_init.connect
def load_token_counter(**_) -> None:
    """The token counter's encoding loaded once as the worker starts
    (``compaction.tokens.load``), not by its first job: in the main process,
    before a prefork pool forks, so its pool processes inherit it (not each
    loading its own, about 310 ms and 54 MiB) and a solo or threads pool has
    it; every process's frozen startup heap (``freeze_startup_heap``, which
    runs later) holds it."""
    from compaction import tokens

    tokens.load()


@worker_process_init.connect
@worker_ready.connect
def freeze_startup_heap(**_) -> None:
    """A worker's startup heap out of the collector's sight
    (``compaction.collector.freeze_startup_heap``): in each pool process of a
    prefork worker as it starts, and in the worker itself once it is ready
    (a solo or threads pool runs jobs there)."""
    from compaction.collector import freeze_startup_heap as freeze

    freeze()
