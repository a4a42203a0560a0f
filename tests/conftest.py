"""What every area's tests share: the real services (tests/service_fixtures.py) and the test tiers.

Tests are imported with pytest's importlib mode as the package ``tests`` (pyproject.toml), so no
test directory ever shadows ``relay``, ``selector`` or ``dashboard`` and nothing edits sys.path.
"""
from __future__ import annotations

import pytest

from tests.tiers import PROCESS_FIXTURES

pytest_plugins = ["tests.service_fixtures"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test using a fixture that starts processes (tests/tiers.py) is `slow` by that fact."""
    for item in items:
        if PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
