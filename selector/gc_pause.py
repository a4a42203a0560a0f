"""Pause Python's cyclic garbage collector while stage 1 builds and drops millions of small objects.

Parsing a release's test tree makes millions of AST nodes, and each scanned file leaves
dataclasses behind; every few hundred allocations the collector walks everything still alive,
so a cold run spent more time collecting than parsing. AST nodes and inventories hold no
reference cycles, so reference counting frees them anyway; the collector runs once at the end.
"""
from __future__ import annotations

import functools
import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def without_gc_pauses(function):
    """Run ``function`` with the collector paused (forked scan workers inherit the pause)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with paused_gc():
            return function(*args, **kwargs)
    return wrapper
