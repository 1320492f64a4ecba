"""What we made of what was said: segments, jobs, attempts, generations."""

from .celery import app as celery_app

__all__ = ["celery_app"]
