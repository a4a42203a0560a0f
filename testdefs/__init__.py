"""testdefs: declarative YAML rules for running upstream PyTorch tests on an out-of-tree device.

Public API (see docs/testdefs.md): ``load_rules``, ``RuleSet`` (``decide``, ``stale``,
``conflicts``, ``relevance``, ``global_config``), ``TestDecision``, ``RulesError``.
testdefs depends on nothing else in the project (relay and selector depend on it).
"""
from testdefs.errors import Problem, RulesError
from testdefs.global_config import GlobalConfig, Tolerance
from testdefs.loader import load_rules
from testdefs.relevance import RelevanceHit, RelevanceIndex
from testdefs.ruleset import UNLISTED, Conflict, EntryMatch, RuleSet, StaleEntry, TestDecision
from testdefs.schema import Category, Mode, json_schema
from testdefs.versions import version_from_ref

__all__ = [
    "Category", "Conflict", "EntryMatch", "GlobalConfig", "Mode", "Problem", "RelevanceHit", "RelevanceIndex",
    "RuleSet", "RulesError", "StaleEntry", "TestDecision", "Tolerance", "UNLISTED", "json_schema", "load_rules",
    "version_from_ref",
]
