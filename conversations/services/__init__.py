"""Writes for conversations (SPEC §3–§5).

* ``ingest``       one document, one transaction: upsert runs and messages,
                   keep revisions, rebuild pairs and planned ranges
* ``ingest_new``   conversations not stored yet, many at once: one COPY per
                   table (PostgreSQL)
* ``written``      what both share: the result, the check against what is
                   stored, the planned segment rows, telling the listener
* ``bulk_import``  many documents: groups of lines committed together, the
                   COPY group with its line-by-line fallback, worker processes
"""
