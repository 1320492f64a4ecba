import importlib

import pytest
from rest_framework.test import APIClient

from tests.factories import make_user, token_for

# The rows the migrations seed, which tests read as they would in production.
_SEEDS = (("compaction.migrations.0004_prompt_versions", "create_versions"),
          ("compaction.migrations.0005_role_groups", "create_groups"),
          ("compaction.migrations.0014_handoff_prompt_version", "create_version"))


def _seed_missing() -> bool:
    """Write the migrations' seed rows if any is missing; True if it did."""
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from compaction.models import PromptVersion

    names = {spec["name"] for spec in importlib.import_module(_SEEDS[0][0]).VERSIONS}
    names.add(importlib.import_module(_SEEDS[2][0]).VERSION["name"])
    roles = set(importlib.import_module(_SEEDS[1][0]).ROLES)
    if (set(PromptVersion.objects.filter(name__in=names).values_list("name", flat=True)) == names
            and set(Group.objects.filter(name__in=roles).values_list("name", flat=True)) == roles):
        return False
    apps = MigrationExecutor(connection).loader.project_state().apps
    for module, function in _SEEDS:
        getattr(importlib.import_module(module), function)(apps, None)
    return True


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """``--reuse-db`` keeps the test database between runs, but a
    transactional test's teardown flushes every table, the migrations' seed
    rows (prompt versions, role groups) with them; ``serialized_rollback``
    restores them only within a run. So a reused database may come without
    them — and would be serialized for the next transactional test without
    them too. Seed what is missing, and serialize again."""
    from django.db import connections

    with django_db_blocker.unblock():
        if _seed_missing():
            for connection in connections.all():
                if hasattr(connection, "_test_serialized_contents"):
                    connection._test_serialized_contents = connection.creation.serialize_db_to_string()


@pytest.fixture
def integrator(db):
    return make_user("integrator", role="integrator")


@pytest.fixture
def api(integrator):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(integrator)}")
    return client
