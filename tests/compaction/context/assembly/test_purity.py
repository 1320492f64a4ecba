"""The assembly library is pure: no database, no Django, no benchmark peers (issue 15, STYLE "Pure core")."""

from __future__ import annotations

import ast
from pathlib import Path

import compaction.context.assembly as package

FORBIDDEN = ("django", "rest_framework", "celery", "langchain", "langchain_core", "conversations", "psycopg")
ALLOWED_PROJECT_IMPORTS = {"compaction.tokens", "compaction.collector"}  # both pure, standard library only


def imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


def test_no_module_of_the_library_imports_a_framework_or_the_database():
    folder = Path(package.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert len(modules) >= 12
    for path in modules:
        for name in imports(path):
            assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
            if name.startswith("compaction"):
                assert name in ALLOWED_PROJECT_IMPORTS, f"{path.name} imports {name}"


def test_every_module_docstring_names_its_rule_and_section():
    folder = Path(package.__file__).parent
    for path in sorted(folder.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert "SPEC §" in doc, path.name
