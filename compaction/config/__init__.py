"""The Django project: settings, URLs, the Celery app and the WSGI entry
point (issue 10). Everything else under ``compaction/`` is the app."""
