"""Spyre CI Relay's test selector: from an upstream change to the spyre tests it can affect."""
from __future__ import annotations

# Binding the function after the submodule import keeps ``selector.select`` the function
# (importing a submodule would otherwise set the package attribute to the module).
from selector.select import select

__all__ = ["select"]
