"""Writes for conversations (SPEC §3–§5).

* ``ingest``       one document, one transaction: upsert runs and messages,
                   keep revisions, rebuild pairs and planned ranges; the COPY
                   path for conversations not stored yet
* ``bulk_import``  many documents: groups of lines committed together, the
                   COPY group with its line-by-line fallback, worker processes
"""
