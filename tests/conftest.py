"""What every area's tests share: the real services (tests/service_fixtures.py) and the test tiers.

Tests are imported with pytest's importlib mode as the package ``tests`` (pyproject.toml), so no
test directory ever shadows ``relay``, ``selector`` or ``dashboard`` and nothing edits sys.path.
"""
from __future__ import annotations

import pytest

pytest_plugins = ["tests.service_fixtures"]

# Fixtures that start processes or servers outside the test's interpreter (redis-server, PostgreSQL,
# Celery workers): a test using one is `slow` by that fact, so `-m "not slow"` is a fast tier.
PROCESS_FIXTURES = frozenset({"redis_server", "redis_url", "postgres_url", "celery_worker"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
