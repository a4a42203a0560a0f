"""Honest test tiers: a fixture that starts processes makes every test using it `slow`.

Decorate such a fixture with ``@starts_processes`` (under ``@pytest.fixture``); tests/conftest.py
marks each collected test that uses one, directly or through other fixtures, so `-m "not slow"`
never starts a process or server outside the test's interpreter. A test that runs a program takes
``run_process`` or ``start_process`` (tests/service_fixtures.py), or a fixture built on them, and
never calls ``subprocess`` itself; a production entry point that starts processes (a run, a shard)
is taken through a fixture too (tests/relay/conftest.py).
"""
from __future__ import annotations

from collections.abc import Callable

PROCESS_FIXTURES: set[str] = set()


def starts_processes(fixture_function: Callable) -> Callable:
    PROCESS_FIXTURES.add(fixture_function.__name__)
    return fixture_function
