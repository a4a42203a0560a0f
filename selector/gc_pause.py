"""Pause Python's cyclic garbage collector while stage 1 builds and drops millions of small objects.

Parsing a release's test tree makes millions of AST nodes, and each scanned file leaves
dataclasses behind; every few hundred allocations the collector walks everything still alive,
so a cold run spent more time collecting than parsing. AST nodes and inventories hold no
reference cycles, so reference counting frees them anyway; what survives the pause is handed to
the collector's oldest generation, walked at its next full collection.
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
            # what the pause allocated and kept (a release's inventories: some 350k containers) goes
            # straight to the oldest generation, as the collector would move it in a few passes;
            # else the first allocation after enable() walks all of it as "young" (0.1 s warm)
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def without_gc_pauses(function):
    """Run ``function`` with the collector paused (forked scan workers inherit the pause)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with paused_gc():
            return function(*args, **kwargs)
    return wrapper
