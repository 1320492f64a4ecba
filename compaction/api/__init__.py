"""The REST API (SPEC §11): ``plumbing`` (errors, strict queries, cursors,
lookups, bodies), ``permissions``, ``auth``, ``throttles``, ``filters``,
then one module per resource; ``urls`` puts them under ``/api/v1/``."""
