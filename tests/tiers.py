"""Honest test tiers: a fixture that starts processes makes every test using it `slow`.

Decorate such a fixture with ``@starts_processes`` (under ``@pytest.fixture``); tests/conftest.py
marks each collected test that uses one, so `-m "not slow"` never starts a process or server
outside the test's interpreter.
"""
from __future__ import annotations

from collections.abc import Callable

PROCESS_FIXTURES: set[str] = set()


def starts_processes(fixture_function: Callable) -> Callable:
    PROCESS_FIXTURES.add(fixture_function.__name__)
    return fixture_function
