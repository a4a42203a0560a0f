"""The device test base behind ``TORCH_TEST_DEVICES=testdefs/test_base.py``.

``make_test_class(PrivateUse1TestBase)`` returns a subclass whose ``instantiate_test`` asks
``RuleSet.decide`` about every generated variant: ``exclude`` variants are deleted (never run,
never reported as skipped; counted in ``STATE.excluded``), tolerance overrides are applied,
and, when the pytest plugin is not active (plain unittest), ``skip``/``xfail``/``xfail_strict``
are applied with unittest's own means. With ``global.exclude_unsupported`` the op list of
``@ops`` tests is filtered first through torch's ``_apply_op_allowlist`` hook (the one behind
``set_test_configs(op_allowlist=...)``), so unsupported ops generate no variants at all.

This module does not import torch.testing: it is loaded while common_device_type is itself
still importing (runpy), so the base class is passed in.
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import unittest
from collections import Counter
from pathlib import Path

from testdefs import instantiation
from testdefs.instantiation import STATE, op_of_test_function
from testdefs.ruleset import TestDecision
from testdefs.schema import Mode


def full_test_file_of(generic_cls: type | None) -> str:
    """The test file's absolute path, which rules are matched against (``RuleSet.decide(file_path=)``)."""
    module = sys.modules.get(getattr(generic_cls, "__module__", ""), None)
    path = getattr(module, "__file__", None)
    if not path:
        return getattr(generic_cls, "__module__", "unknown").replace(".", "/") + ".py"
    return Path(path).resolve().as_posix()


def test_file_of(generic_cls: type | None) -> str:
    """The test file as pytest names it: relative to the working directory when under it."""
    full = Path(full_test_file_of(generic_cls))
    try:
        return full.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return full.as_posix()


_XFAIL_SKIP_PREFIX = "xfail (failed as declared: "


def _xfail_under_unittest(fn, reason: str):
    """unittest has no non-strict xfail: a failure becomes a skip saying so, a pass stays a pass."""
    @functools.wraps(fn)
    def xfail_wrapper(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except unittest.SkipTest:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure is the declared one
            raise unittest.SkipTest(f"{_XFAIL_SKIP_PREFIX}{type(exc).__name__}): {reason}") from exc
    return xfail_wrapper


def make_test_class(base: type) -> type:
    class TestdefsTestBase(base):
        """PrivateUse1TestBase that applies testdefs rules at instantiation."""

        _testdefs_tolerances: dict[str, tuple[float | None, float | None]] = {}
        _testdefs_ids: dict[str, str] = {}  # generated method name -> test id
        _testdefs_generate: tuple[list[str], list[str]] = ([], [])  # (dtypes, ops) of the test being instantiated
        _testdefs_tolerance: tuple[float | None, float | None] | None = None  # this test's override
        _testdefs_not_equal = False  # inside assertNotEqual, whose assertEqual must stay exact

        @classmethod
        def _apply_op_allowlist(cls, ops):
            rules = instantiation.active_rules()
            config = rules.global_config if rules else None
            if config is not None and config.exclude_unsupported and config.supported_ops:
                kept = [op for op in ops.op_list if config.op_spec(op.full_name) is not None]
                STATE.ops_filtered += len(ops.op_list) - len(kept)
                ops.op_list = kept
            super()._apply_op_allowlist(ops)

        @classmethod
        def _apply_op_overrides(cls, ops, test=None):
            _, extra_ops = cls._testdefs_generate
            if extra_ops:  # ops the rules generate although the test's @ops list leaves them out
                from torch.testing._internal.common_methods_invocations import op_db

                listed = {op.full_name for op in ops.op_list}
                ops.op_list = [*ops.op_list, *(op for op in op_db
                                               if op.full_name in extra_ops and op.full_name not in listed)]
            extra_dtypes = cls._testdefs_extra_dtypes()
            if extra_dtypes and ops.allowed_dtypes is not None:
                ops.allowed_dtypes = set(ops.allowed_dtypes) | set(extra_dtypes)
            super()._apply_op_overrides(ops, test)

        @classmethod
        def _get_dtypes(cls, test):
            dtypes = super()._get_dtypes(test)
            extra = cls._testdefs_extra_dtypes()
            if dtypes is None or not extra:
                return dtypes
            return [*dtypes, *(d for d in extra if d not in dtypes)]

        @classmethod
        def _testdefs_extra_dtypes(cls) -> list:
            names, _ = cls._testdefs_generate
            if not names:
                return []
            import torch

            return [getattr(torch, name) for name in names]

        @classmethod
        def instantiate_test(cls, name, test, *, generic_cls=None):
            _settle_device_type(cls)
            before = set(cls.__dict__)
            rules = instantiation.active_rules()
            if rules is not None:  # variants the rules add to what upstream's decorators generate
                cls._testdefs_generate = rules.generated_variants(
                    full_test_file_of(generic_cls), getattr(generic_cls, "__name__", None), name)
            try:
                super().instantiate_test(name, test, generic_cls=generic_cls)
            finally:
                cls._testdefs_generate = ([], [])
            if rules is None:
                return
            if "_testdefs_tolerances" not in cls.__dict__:
                cls._testdefs_tolerances, cls._testdefs_ids = {}, {}
            test_file, full_file = test_file_of(generic_cls), full_test_file_of(generic_cls)
            for attr in sorted(set(cls.__dict__) - before):
                fn = cls.__dict__[attr]
                if not (attr.startswith("test") and callable(fn)):
                    continue
                op = op_of_test_function(fn)
                test_id = f"{test_file}::{cls.__name__}::{attr}"
                decision = rules.decide(test_id, torch_version=STATE.torch_version, op=op, file_path=full_file)
                STATE.decisions[test_id] = decision
                cls._testdefs_ids[attr] = test_id
                if decision.mode == Mode.exclude:
                    delattr(cls, attr)
                    STATE.excluded.append(decision)
                    continue
                fn.testdefs_op = op
                if decision.tolerance is not None:
                    cls._testdefs_tolerances[attr] = (decision.tolerance.atol, decision.tolerance.rtol)
                if not STATE.plugin_active:
                    setattr(cls, attr, _apply_mode_unittest(fn, decision))

        def _apply_precision_override_for_test(self, test, param_kwargs):
            super()._apply_precision_override_for_test(test, param_kwargs)
            self._testdefs_tolerance = type(self)._testdefs_tolerances.get(self._testMethodName)

        def assertEqual(self, x, y, *args, **kwargs):
            """A rules tolerance loosens numeric comparisons only: tensors and floats, not ids, pointers,
            sizes or strings, and never the comparison inside assertNotEqual."""
            override = self._testdefs_tolerance
            if override is None or self._testdefs_not_equal or not (_numeric(x) or _numeric(y)):
                return super().assertEqual(x, y, *args, **kwargs)
            saved = self.precision, self.rel_tol
            atol, rtol = override
            if atol is not None:
                self.precision = atol
            if rtol is not None:
                self.rel_tol = rtol
            try:
                return super().assertEqual(x, y, *args, **kwargs)
            finally:
                self.precision, self.rel_tol = saved

        def assertNotEqual(self, x, y, *args, **kwargs):
            self._testdefs_not_equal = True
            try:
                return super().assertNotEqual(x, y, *args, **kwargs)
            finally:
                self._testdefs_not_equal = False

        def run(self, result=None):
            outcome_before = _outcome_counts(result)
            returned = super().run(result)
            if outcome_before is not None:
                test_id = type(self)._testdefs_ids.get(self._testMethodName)
                if test_id is not None:
                    STATE.outcomes[test_id] = _outcome_after(result, outcome_before)
            return returned

        @classmethod
        def excluded_variant_count(cls) -> int:
            return len(STATE.excluded)

    TestdefsTestBase.__name__ = TestdefsTestBase.__qualname__ = "TestdefsTestBase"
    return TestdefsTestBase


def _settle_device_type(cls: type) -> None:
    """Give the device class the backend's name (``spyre``) as its device_type before it instantiates tests.

    torch's PrivateUse1TestBase says ``privateuse1`` until its setUpClass renames it, and that
    setUpClass runs on the shared base the first time any class instantiates a test taking
    ``device``. ``@dtypesIfPRIVATEUSE1`` keys its dtypes by the backend name, looked up by the
    class's device_type: so the dtypes of whichever tests were instantiated before that first
    rename were silently dropped (a missing float64 variant, a false green). Which tests those
    are depends on the files run together and on the hash seed (torch walks the class members
    as a set). With the name settled first, every test sees what it sees when it runs."""
    if cls.device_type == "privateuse1":
        import torch

        cls.device_type = torch._C._get_privateuse1_backend_name()


def _numeric(value) -> bool:
    """A tensor, array or float (or a sequence of them): what a tolerance is about."""
    if isinstance(value, (list, tuple)) and value:
        return _numeric(value[0])
    if isinstance(value, (bool, int, str, bytes)) or value is None:
        return False
    return isinstance(value, (float, complex)) or (hasattr(value, "dtype") and hasattr(value, "shape"))


def _apply_mode_unittest(fn, decision: TestDecision):
    if decision.mode == Mode.skip:
        return unittest.skip(decision.describe())(fn)
    if decision.mode == Mode.xfail_strict:
        return unittest.expectedFailure(fn)
    if decision.mode == Mode.xfail:
        return _xfail_under_unittest(fn, decision.describe())
    return fn


_RESULT_LISTS = ("failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses")


def _outcome_counts(result) -> dict[str, int] | None:
    if not isinstance(result, unittest.TestResult):
        return None  # pytest drives the case; its own report has the outcome
    return {name: len(getattr(result, name)) for name in _RESULT_LISTS}


def _outcome_after(result, before: dict[str, int]) -> str:
    grown = [name for name in _RESULT_LISTS if len(getattr(result, name)) > before[name]]
    if not grown:
        return "passed"
    if grown[0] == "skipped" and str(result.skipped[-1][1]).startswith(_XFAIL_SKIP_PREFIX):
        return "xfailed"
    return {"failures": "failed", "errors": "error", "skipped": "skipped",
            "expectedFailures": "xfailed", "unexpectedSuccesses": "xpassed_strict"}[grown[0]]


def write_report(path: Path) -> None:
    """The test base's own record (plain unittest runs): every decision, exclusion and outcome."""
    decisions = {}
    for test_id, decision in STATE.decisions.items():
        record = decision.to_dict()
        record["layer"] = "test_base"
        record["outcome"] = "not_generated" if decision.mode == Mode.exclude else STATE.outcomes.get(test_id)
        decisions[test_id] = record
    data = {
        "rules": list(STATE.rule_paths),
        "torch_version": STATE.torch_version,
        "counts": dict(sorted(Counter(d["mode"] for d in decisions.values()).items())),
        "excluded_at_instantiation": len(STATE.excluded),
        "ops_filtered_by_allowlist": STATE.ops_filtered,
        "decisions": decisions,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def register_report_at_exit() -> None:
    target = os.environ.get(instantiation.REPORT_ENV)
    if target:
        atexit.register(lambda: write_report(Path(target)))
