"""The Celery app. Configuration comes from Django settings (CELERY_*).

Jobs are acknowledged late and rejected (so redelivered) if their worker is
lost; each worker process takes one message at a time; soft and hard time
limits bound a stuck model call. The beat schedule runs the reaper/scanner.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compaction.config.settings")

app = Celery("compaction")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


app.conf.beat_schedule = {
    "compaction-reap-and-scan": {
        "task": "compaction.reap_and_scan",
        # Read here, not from settings, so beat need not load Django to plan.
        "schedule": float(os.environ.get("COMPACTION_SCAN_INTERVAL_SECONDS") or 15.0),
    },
}
