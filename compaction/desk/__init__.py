"""The review and operations desk (SPEC §1; issue 5): ``views`` (one module
per page), ``forms``, ``selectors`` (scope-limited reads), ``presenters``
(what the pages draw, as numbers), ``templatetags`` (the ``desk`` library)
and ``urls``."""
