"""What we made of what was said: segments, jobs, attempts, generations.

``celery -A compaction`` finds the Celery app here (``compaction.config.celery``).
"""

from .config.celery import app as celery_app

__all__ = ["celery_app"]
