"""Stage 2: apply the testdefs reuse rules and the upstream device restrictions.

Drops tests that cannot run on spyre (restricted to other devices by ``onlyCUDA``-style
decorators or ``instantiate_device_type_tests(only_for=/except_for=)``, or put in
``skip``/``exclude`` mode by testdefs, or every op they are parametrized over excluded);
keeps known xfails marked; adds always-run tests and tests that last failed on spyre.
Every drop names its rule as ``file:line``.
"""
from __future__ import annotations

from typing import Any

from selector.changes.functions import BEFORE_SKIPS
from selector.inventory.model import Inventory
from selector.model import Candidate, Evidence
from selector.stages.base import SelectContext
from selector.stages.diff import add_candidate
from testdefs.ids import parse

SPYRE_NAMES = frozenset({"privateuse1", "spyre"})
DROP_MODES = frozenset({"skip", "exclude"})
XFAIL_MODES = frozenset({"xfail", "xfail_strict"})
# decorator -> the only device type it lets the test instantiate for
ONLY_DECORATORS = {"onlyCUDA": "cuda", "onlyCPU": "cpu", "onlyMPS": "mps", "onlyXPU": "xpu",
                   "onlyHPU": "hpu", "onlyMeta": "meta", "onlyMTIA": "mtia"}


def rule_reference(decision: Any) -> str | None:
    """``file:line`` of the testdefs entry (or file section) behind a ``TestDecision``."""
    return getattr(decision, "entry", None) or getattr(decision, "rules_file", None)


def rule_text(decision: Any) -> str:
    describe = getattr(decision, "describe", None)
    return describe() if callable(describe) else str(getattr(decision, "reason", "") or "")


def inventory_lookup(inventory: Inventory | None, test_id: str) -> tuple[Any, Any] | None:
    """(TestClass or None, TestFunction) from the stage-1 inventory at the to-ref, or None."""
    parsed = parse(test_id)
    file_inventory = inventory.files.get(parsed.file) if inventory is not None else None
    if file_inventory is None:
        return None
    test_class = file_inventory.class_named(parsed.class_base) if parsed.class_base else None
    tests = test_class.tests if test_class is not None else file_inventory.functions
    test = next((t for t in tests if t.name == parsed.method_base), None)
    return (test_class, test) if test is not None else None


def device_restriction(file: str, test_class: Any, test: Any) -> tuple[str, str] | None:
    """(why, file:line) if the inventory says the test never instantiates for spyre."""
    for decorator in list(test.restrictions) + list(test.decorators) + list(getattr(test_class, "decorators", []) or []):
        bare = decorator.lstrip("@").split("(")[0].split(".")[-1]
        if bare in ONLY_DECORATORS:
            return f"@{bare} restricts it to {ONLY_DECORATORS[bare]}", f"{file}:{test.lineno}"
        if bare == "onlyOn":
            devices = {d.strip(" '\"").lower() for d in decorator.split("(", 1)[-1].rstrip(")").split(",")}
            if devices and not SPYRE_NAMES & devices:
                return f"@{decorator.lstrip('@')} leaves spyre out", f"{file}:{test.lineno}"
    instantiate = getattr(test_class, "instantiate", None) or {}
    only_for = [str(d).lower() for d in instantiate.get("only_for") or []]
    except_for = [str(d).lower() for d in instantiate.get("except_for") or []]
    where = f"{file}:{instantiate.get('lineno') or getattr(test_class, 'lineno', '?')}"
    if only_for and not SPYRE_NAMES & set(only_for):
        return f"instantiate_device_type_tests(only_for={only_for}) leaves spyre out", where
    if SPYRE_NAMES & set(except_for):
        return f"instantiate_device_type_tests(except_for={except_for}) excludes spyre", where
    return None


def _op_formatted(op: str) -> str:
    return op.replace(".", "_").replace(" ", "_")


class RulesStage:
    name = "rules"

    def run(self, ctx: SelectContext) -> None:
        self._add_history_failures(ctx)
        self._add_always_run(ctx)
        live = ctx.live()
        for index, test_id in enumerate(live, start=1):
            self._apply(ctx, test_id)
            if index % 500 == 0:
                ctx.say(self.name, "applying testdefs", index, len(live))
        ctx.funnel["applicable"] = len(ctx.live())
        ctx.say(self.name, f"{ctx.funnel['applicable']} applicable to spyre", len(live), len(live))

    def _apply(self, ctx: SelectContext, test_id: str) -> None:
        found = inventory_lookup(ctx.inventory, test_id)
        restriction = device_restriction(parse(test_id).file, *found) if found else None
        # a decorator restriction ("@onlyCPU ...") is a skip raised in the test, after setUp
        if restriction and restriction[0].startswith("@") and self._setup_changed(ctx, test_id):
            ctx.select(test_id, self.name, f"{ctx.decisions[test_id].reason} Kept although {restriction[0]}: "
                       "the changed setUp runs on spyre before that skip.")
            restriction = None
        if restriction:
            why, where = restriction
            ctx.drop(test_id, self.name, f"Dropped: {why}.", rule=where)
            return
        if ctx.rules is None:
            return
        candidate = ctx.candidates.get(test_id)
        decision = ctx.rules.decide(test_id, torch_version=ctx.torch_version)
        mode = str(getattr(decision, "mode", "unlisted"))
        rule = rule_reference(decision)
        why = rule_text(decision)
        if mode in DROP_MODES:
            ctx.drop(test_id, self.name, f"Dropped: testdefs mode '{mode}'{': ' + why if why else ''}.", rule=rule)
            return
        if candidate is not None and candidate.ops:
            if self._drop_excluded_ops(ctx, test_id, candidate):
                return
        if mode in XFAIL_MODES:
            ctx.select(test_id, self.name,
                       f"{ctx.decisions[test_id].reason} Kept as a known {mode}{': ' + why if why else ''}.",
                       rule=rule or ctx.decisions[test_id].rule)
        elif mode == "mandatory_success" and getattr(decision, "entry", None):  # listed, not the file default
            ctx.must_run.add(test_id)
            ctx.select(test_id, self.name, f"{ctx.decisions[test_id].reason} Must pass on spyre (testdefs).",
                       rule=rule)

    @staticmethod
    def _setup_changed(ctx: SelectContext, test_id: str) -> bool:
        """A reason says a setUp-like method of the test's class changed (it runs before a device skip)."""
        candidate = ctx.candidates.get(test_id)
        return candidate is not None and any(BEFORE_SKIPS in (e.detail or "") for e in candidate.reasons)

    def _drop_excluded_ops(self, ctx: SelectContext, test_id: str, candidate: Candidate) -> bool:
        """Remove ops testdefs excludes for this test; drop the test when none is left."""
        kept, excluded_rules = [], []
        for op in candidate.ops:
            decision = ctx.rules.decide(test_id, torch_version=ctx.torch_version, op=op)
            if str(getattr(decision, "mode", "")) in DROP_MODES:
                excluded_rules.append(f"{op} ({rule_reference(decision) or 'testdefs'})")
            else:
                kept.append(op)
        if kept:
            candidate.ops = kept
            return False
        ctx.drop(test_id, self.name, "Dropped: every op it is parametrized over is excluded on spyre: "
                 + ", ".join(excluded_rules) + ".", rule=excluded_rules[0].split("(", 1)[1].rstrip(")"))
        return True

    def _add_history_failures(self, ctx: SelectContext) -> None:
        for test_id in ctx.history.previously_failed():
            if test_id in ctx.decisions and not ctx.decisions[test_id].selected:
                continue
            parsed = parse(test_id)
            add_candidate(ctx, Candidate(
                test_id=test_id, file=parsed.file, class_name=parsed.class_base, name=parsed.method_base,
                change="history", reasons=[Evidence(file=parsed.file, detail="last run on spyre failed")]),
                stage=self.name)

    def _add_always_run(self, ctx: SelectContext) -> None:
        relevance = getattr(ctx.rules, "relevance", None)
        for pattern, where in sorted(getattr(relevance, "always_run_refs", None) or []):
            if any(ch in pattern for ch in "*?["):
                ctx.always_run_patterns.append((pattern, where))  # matched against collected ids in verify
                continue
            parsed = parse(pattern)
            test_id = parsed.normalised
            if test_id in ctx.decisions and not ctx.decisions[test_id].selected:
                continue
            add_candidate(ctx, Candidate(
                test_id=test_id, file=parsed.file, class_name=parsed.class_base,
                name=parsed.method_base, change="always",
                reasons=[Evidence(file=parsed.file, rule=where, detail="always-run rule in testdefs")]),
                stage=self.name)
