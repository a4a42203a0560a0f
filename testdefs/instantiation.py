"""State shared by the two layers that apply rules in one process: the pytest plugin and the test base.

The test base (``testdefs/test_base.py``) is executed by torch through ``runpy`` when
``TORCH_TEST_DEVICES`` points at it, so it cannot hold state other code can import; it keeps
it here. Nothing in this module imports torch.
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path

from testdefs.loader import load_rules
from testdefs.ruleset import RuleSet, TestDecision

RULES_ENV = "RELAY_TESTDEFS"  # os.pathsep-separated rules files or directories
REPORT_ENV = "RELAY_TESTDEFS_REPORT"  # the test base writes its decisions here (plain unittest runs)
TORCH_VERSION_ENV = "RELAY_TESTDEFS_TORCH_VERSION"  # decide as if this torch version were installed


@dataclass
class SharedState:
    rules: RuleSet | None = None
    rule_paths: list[str] = field(default_factory=list)
    plugin_active: bool = False  # the pytest plugin marks skip/xfail; the test base only excludes
    torch_version: str | None = None
    excluded: list[TestDecision] = field(default_factory=list)  # variants the test base did not generate
    decisions: dict[str, TestDecision] = field(default_factory=dict)  # every variant the test base decided
    outcomes: dict[str, str] = field(default_factory=dict)  # test base under plain unittest: id -> outcome
    ops_filtered: int = 0  # OpInfos dropped before instantiation by global.exclude_unsupported

    def reset(self) -> None:
        """Forget everything (end of a pytest session; in-process pytest runs must not leak rules)."""
        self.__init__()


STATE = SharedState()


def rule_paths_from_env() -> list[str]:
    return [p for p in os.environ.get(RULES_ENV, "").split(os.pathsep) if p]


def active_rules() -> RuleSet | None:
    """The rules of this process: those the plugin loaded, else RELAY_TESTDEFS, else None."""
    if STATE.rules is None:
        paths = rule_paths_from_env()
        if paths:
            STATE.rules = load_rules([Path(p) for p in paths])
            STATE.rule_paths = paths
    if STATE.torch_version is None:
        STATE.torch_version = os.environ.get(TORCH_VERSION_ENV) or None
    return STATE.rules


def op_of_test_function(fn) -> str | None:
    """The OpInfo full name an instantiated ``@ops`` test runs (``add``, ``div.floor_rounding``), if any.

    ``instantiate_test`` binds the variant's parameters as the default of ``param_kwargs``; wrappers
    made with functools.wraps are followed through ``__wrapped__``.
    """
    seen = 0
    fn = getattr(fn, "__func__", fn)
    while fn is not None and seen < 10:
        known = getattr(fn, "testdefs_op", None)
        if known:
            return known
        try:
            parameter = inspect.signature(fn, follow_wrapped=False).parameters.get("param_kwargs")
        except (TypeError, ValueError):
            parameter = None
        if parameter is not None and isinstance(parameter.default, dict):
            op = parameter.default.get("op")
            if op is not None:
                return getattr(op, "full_name", None) or getattr(op, "name", None)
        fn = getattr(fn, "__wrapped__", None)
        seen += 1
    return None
