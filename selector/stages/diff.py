"""Stage 1: what changed. Delegates to ``selector.changes.analyse`` and records each candidate."""
from __future__ import annotations

import posixpath
import re

from selector.changes.classify import classify
from selector.model import Candidate, Evidence
from selector.renames import RenamedRules, renames_of
from selector.stages.base import MUST_RUN_CHANGES, SelectContext

CHANGE_WORDS = {
    "added": "test added", "modified": "test body or decorators changed", "renamed": "test renamed",
    "moved": "test moved to another class or file", "helper": "a helper it calls changed",
    "opinfo": "an OpInfo entry it is parametrized over changed",
    "source": "a source file it is relevant to changed (testdefs relevance rule)",
    "always": "always-run rule", "history": "failed on spyre in an earlier run",
}
# A change kind covers several causes ("helper": a helper, module data, a base class's setUp, a file
# read by path, ...); the first reason's detail says which, and the words must fit it. First match wins.
DETAIL_WORDS = (
    ("(its file star-imports", "the test its file star-imports was selected"),
    ("it runs before every test it star-imports", "its file's module-level code changed (it runs the tests it star-imports)"),
    ("conservative:", "a module it may reach in ways static analysis cannot follow changed (selected conservatively)"),
    ("by its path", "a data file it reads by its path changed"),
    ("selected conservatively", "a data file its file names changed (selected conservatively)"),
    ("@parametrize(", "its @parametrize values changed"),
    ("reads module-level", "module-level data it reads changed"),
    ("in its attributes or decorators", "module-level data its class reads changed"),
    ("a changed attribute of base class", "a class attribute it reads changed"),
    ("decorators or bases of base class", "its base class's decorators or bases changed"),
    ("which run with every test", "a setUp-like method of its base class changed"),
    ("which every test inherits", "its base class's decorators, bases or class attributes changed"),
    ("a method every test runs)", "its base class changed"),
    ("through its base class", "a base-class method it calls changed"),
    ("it runs before every test", "a setUp-like method of its class changed"),
    ("does not parse at one ref", "a helper module it imports does not parse at one ref"),
    ("class decorators, bases or attributes", "its class's decorators, bases or attributes changed"),
    ("instantiate_device_type_tests arguments", "its class's instantiate_device_type_tests arguments changed"),
    ("added to its @ops list", "an op was added to its @ops list"),
    ("its @ops/@dtypes lists changed", "its @ops/@dtypes lists changed"),
    ("did not parse at", "its file did not parse at the from-ref"),
    ("OpInfo file does not parse", "an OpInfo file does not parse at one ref (every @ops test is selected)"),
)
YAML_OP = re.compile(r"\(op ([\w.]+)\)")


OTHER_OPS_SHOWN = 3  # a test over op_db can be reached by hundreds of entries on a release


def change_words(change: str, first: Evidence | None) -> str:
    """What happened, in words that fit the reason: a ``native_functions.yaml`` entry is no helper,
    an op's decomposition no relevance rule."""
    detail = (first.detail or "") if first is not None else ""
    if first is not None and change not in ("added", "renamed", "moved", "always", "history"):
        for marker, words in DETAIL_WORDS:
            if marker in detail:
                return words
        kind = classify(first.file) if first.file and not first.rule else None
        if kind in ("native_functions", "derivatives"):
            op = YAML_OP.search(detail)
            return f"the {posixpath.basename(first.file)} entry for `{op.group(1)}` changed" if op else \
                f"a {posixpath.basename(first.file)} entry of an op it tests changed"
        if kind == "op_source":
            return "the Python implementation, reference or decomposition of an op it tests changed"
    return CHANGE_WORDS.get(change, change)


def candidate_reason(candidate: Candidate) -> str:
    """One sentence: what changed and where."""
    first = candidate.reasons[0] if candidate.reasons else None
    words = change_words(candidate.change, first)
    if first is None:
        return f"Selected: {words}."
    where = first.file or first.rule or ""
    if first.hunk:
        where = f"{where} {first.hunk}".strip()
    detail = f" ({first.detail})" if first.detail else ""
    op = f" [op {first.op}]" if first.op else ""
    text = f"Selected: {words}{op}: {where}{detail}." if where else f"Selected: {words}{op}{detail}."
    return text + _other_ops(candidate.reasons)


def _other_ops(reasons) -> str:
    """Where the other ops' reasons come from: each op's variants were selected by its own hunk."""
    first_op = reasons[0].op if reasons else None
    others: dict[str, str] = {}
    for item in reasons[1:]:
        if item.op and item.op != first_op and item.op not in others:
            others[item.op] = f"{item.file} {item.hunk}".strip() if item.hunk else (item.file or item.rule or "")
    if not others:
        return ""
    shown = [f"{op}: {where}" for op, where in list(others.items())[:OTHER_OPS_SHOWN]]
    more = f"; and {len(others) - OTHER_OPS_SHOWN} more ops" if len(others) > OTHER_OPS_SHOWN else ""
    return f" Other ops, each by its own hunk: {'; '.join(shown)}{more}."


def count_inventory_tests(inventory) -> int | None:
    """Number of test functions (before device instantiation) in the to-ref inventory."""
    return None if inventory is None else int(inventory.counts()["tests"])


def add_candidate(ctx: SelectContext, candidate: Candidate, stage: str = "diff") -> None:
    """Record a candidate as selected (merging evidence when several reasons find the same test)."""
    existing = ctx.candidates.get(candidate.test_id)
    if existing is not None:
        merged_ops = sorted(set(existing.ops) | set(candidate.ops))
        existing.ops = merged_ops if existing.ops and candidate.ops else []  # [] means every op
        known = {r.key() for r in existing.reasons}  # a set: a test can carry hundreds of OpInfo reasons
        existing.reasons.extend(r for r in candidate.reasons if r.key() not in known)
        if candidate.change in MUST_RUN_CHANGES:
            ctx.must_run.add(candidate.test_id)
        return
    # stage 1's evidence is never changed later: copy the lists, share the (read-only) Evidence objects
    ctx.candidates[candidate.test_id] = candidate.model_copy(update={"ops": list(candidate.ops),
                                                                     "reasons": list(candidate.reasons)})
    if candidate.change in MUST_RUN_CHANGES:
        ctx.must_run.add(candidate.test_id)
    ctx.select(candidate.test_id, stage, candidate_reason(candidate), evidence=list(candidate.reasons))


class DiffStage:
    name = "diff"

    def run(self, ctx: SelectContext) -> None:
        from selector.changes import analyse  # stage 1 lives in its own package

        ctx.say(self.name, f"analysing {ctx.from_ref}..{ctx.to_ref}")
        report = analyse(ctx.source, ctx.from_ref, ctx.to_ref, rules=ctx.rules)
        ctx.report = report
        ctx.from_sha, ctx.to_sha = report.from_sha, report.to_sha
        renames = renames_of(report.candidates)
        if renames:  # moved/renamed tests keep their old id's testdefs rule and history
            ctx.history.link(renames)
            if ctx.rules is not None:
                ctx.rules = RenamedRules(ctx.rules, renames)
        for candidate in sorted(report.candidates, key=lambda c: c.test_id):
            add_candidate(ctx, candidate)
        total = count_inventory_tests(ctx.inventory)
        if total is not None:
            ctx.funnel["upstream_total"] = total
        ctx.funnel["changed"] = len(ctx.live())
        ctx.say(self.name, f"{ctx.funnel['changed']} changed tests", len(ctx.candidates), len(ctx.candidates))
