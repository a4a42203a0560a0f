"""Stage 4: verify on spyre. Resolve real instantiated ids, drop what does not exist,
estimate durations, order riskiest first, apply the budget and split into shards."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from selector import sharding
from selector.budget import cut
from selector.model import Evidence
from selector.stages.base import SelectContext
from selector.stages.collect import Collected, EarlyCollector
from selector.stages.collect_cache import collect_cached, open_collect_cache
from selector.stages.dtype_risk import (
    DTYPE_RISK,
    ChangeDtypeScanner,
    op_spelling,
    reaches_variant,
    spellings_in,
    unsupported_dtypes,
)
from selector.stages.rules import DROP_MODES, XFAIL_MODES, rule_reference, rule_text
from testdefs.ids import parse


def _op_names(ops: list[str]) -> set[str]:
    return {op.replace(".", "_").replace(" ", "_") for op in ops}


class VariantMatcher:
    """Map an instantiated id to the un-instantiated test it came from.

    ``test_foo_add_spyre_float32`` normalises to ``test_foo_add``: the method is ``test_foo``
    parametrized over op ``add``, unless the class really has a ``test_foo_add``. The
    longest method name of the class that prefixes the base wins.
    """

    def __init__(self, ctx: SelectContext, files: list[str]) -> None:
        sources = ctx.sources()  # the files stage 3 parsed are not parsed again
        sources.load(files)
        self.methods = {f: sources.class_methods(f) for f in files}

    def parent(self, test_id: str) -> tuple[str, str]:
        """(normalised parent id, parameter suffix such as the op name or '')."""
        parsed = parse(test_id)
        names = self.methods.get(parsed.file, {}).get(parsed.class_base or "", set())
        base = parsed.method_base.split("[", 1)[0]
        best = longest_method(base, names)
        if not best:
            return parsed.normalised, ""
        suffix = base[len(best) + 1:]
        return "::".join(p for p in (parsed.file, parsed.class_base, best) if p), suffix


def longest_method(base: str, names: set[str]) -> str:
    """The longest name that is ``base`` or a prefix of it ending before an underscore ('' if none):
    only those prefixes can match, so they are looked up, longest first (a class has hundreds of
    methods, a release collects hundreds of thousands of variants)."""
    end = len(base)
    while end > 0:
        if base[:end] in names:
            return base[:end]
        end = base.rfind("_", 0, end)
    return ""


BROAD_CHANGES = ("always", "history")  # candidates no analysis traced to the change


def _traced(candidate) -> list[Evidence]:
    """Stage 1's own reasons for a candidate: those naming a changed file, not a rule or the agent."""
    return [e for e in (candidate.reasons if candidate is not None else [])
            if e.rule is None and e.file and not (e.detail or "").startswith("similarity")]


@dataclass(frozen=True)
class Traced:
    """What ordering asks of one test's traced reasons, worked out once per test: a release's op_db
    test has thousands of variants and hundreds of reasons, and each variant asks the same."""

    reasons: list[Evidence]
    ops: tuple[str, ...]  # the distinct ops the reasons name
    only_ops: bool  # every reason names an op

    @classmethod
    def of(cls, candidate) -> Traced:
        reasons = _traced(candidate)
        return cls(reasons, tuple(dict.fromkeys(e.op for e in reasons if e.op)), all(e.op for e in reasons))


def directness(ctx: SelectContext, test_id: str, parent: str, traced: Traced | None = None) -> int:
    """How directly the change reaches a variant, most direct first (docs/selector.md, "Order"):

    0. the variant runs a dtype the device does not support (a new float64 variant): near-certain news;
    1. stage 1 traced the change to it: its own code, a helper or data it reads, an op source or
       OpInfo entry of its own op (when a reason names ops, the variant is of one of them);
    2. stage 1 traced the change to the test, but its reasons name other ops than this variant's
       (``test_declared_kernel`` parametrized over ops, ``digamma`` changed: the ``add`` variant);
    3. only a broad rule reaches it: a relevance rule, an always-run rule, the agent, past failures.

    ``traced``: ``Traced.of`` the parent's candidate, when the caller keeps it per parent.
    """
    if test_id in ctx.outside_dtypes:
        return 0
    candidate = ctx.candidates.get(parent)
    traced = traced or Traced.of(candidate)
    if candidate is None or candidate.change in BROAD_CHANGES or not traced.reasons:
        return 3
    method = test_id.rsplit("::", 1)[-1]
    return 2 if traced.only_ops and not any(reaches_variant(op, method) for op in traced.ops) else 1


class PathReaders:
    """Whether a test file names a file's path in its code (not in a comment), one read per test file.

    ``root`` is the to-ref tree; without one (no checkout was made) nothing is known to be read."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._code: dict[str, str] = {}
        self._answers: dict[tuple[str, str], bool] = {}  # asked once per variant and reason: kept

    def __call__(self, test_file: str, path: str) -> bool:
        if self.root is None or test_file == path:
            return False
        key = (test_file, path)
        if key not in self._answers:
            if test_file not in self._code:
                try:
                    text = (self.root / test_file).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = ""
                self._code[test_file] = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
            self._answers[key] = path in self._code[test_file]
        return self._answers[key]


def runs_changed_copy(test_id: str, read_reasons: list[Evidence]) -> bool:
    """Whether the variant's own file reads a changed file it was traced to by that file's path:
    ``read_reasons`` are its test's traced reasons whose file the variant's file names (``PathReaders``).

    The tests run against the installed torch, never the checkout's ``torch/`` (the runner keeps
    the checkout off the import path): a test importing a changed ``torch/...`` module runs the
    installed copy, which holds the change only when torch was built from this ref, while a test
    that opens the changed file at its path (``importlib`` from a path, ``yaml.safe_load`` of
    ``native_functions.yaml``) runs the checkout's changed text whatever torch is installed."""
    method = test_id.rsplit("::", 1)[-1]
    return any(not e.op or reaches_variant(e.op, method) for e in read_reasons)


def risk_order(ctx: SelectContext, ids: list[str], parents: dict[str, str]) -> list[str]:
    """Most directly reached first; within a tier, variants whose file reads the changed file by its
    path first; then by risk score, must-run, past failure rate, id."""
    reads = PathReaders(ctx.checkout)  # the to-ref tree when a stage checked it out (stage 4 always does)
    traced: dict[str, Traced] = {}  # per parent: its variants share it
    read_reasons: dict[tuple[str, str], list[Evidence]] = {}  # per (parent, test file): what the file reads by path

    def key(test_id: str):
        decision = ctx.decisions[test_id]
        parent = parents.get(test_id, test_id)
        if parent not in traced:
            traced[parent] = Traced.of(ctx.candidates.get(parent))
        test_file = test_id.split("::", 1)[0]
        if (parent, test_file) not in read_reasons:
            read_reasons[parent, test_file] = [e for e in traced[parent].reasons if reads(test_file, e.file)]
        must = parent in ctx.must_run
        return (directness(ctx, test_id, parent, traced[parent]),
                not runs_changed_copy(test_id, read_reasons[parent, test_file]),
                -(decision.score or 0.0), not must, -ctx.history.failure_rate(test_id), test_id)
    return sorted(ids, key=key)


def schedule(ctx: SelectContext, stage: str, ids: list[str], parents: dict[str, str]) -> None:
    """Order, budget and shard the selected ids; record cuts as drops and fill ctx.tests/shards."""
    ordered = risk_order(ctx, ids, parents)
    seconds = {test_id: round(ctx.history.estimate_seconds(test_id)[0], 3) for test_id in ordered}
    kept = ordered
    if ctx.budget is not None:
        must_keep = {i for i in ordered if parents.get(i, i) in ctx.must_run}
        kept, cut_ids = cut([(i, seconds[i]) for i in ordered], ctx.budget, must_keep)
        rank = {test_id: index for index, test_id in enumerate(ordered, start=1)}
        for test_id in cut_ids:
            ctx.drop(test_id, stage, f"Dropped by the budget ({ctx.budget.describe()}): risk rank "
                     f"{rank[test_id]} of {len(ordered)}, estimated {seconds[test_id]:g}s.",
                     rule="budget", score=ctx.decisions[test_id].score, estimated_seconds=seconds[test_id])
    shards = sharding.shard([(i, seconds[i]) for i in kept], max(1, ctx.shards))
    shard_of = {test_id: index for index, members in enumerate(shards) for test_id in members}
    for test_id in kept:  # one copy per decision (a release keeps 58,831): a cut one was rebuilt by drop
        ctx.decisions[test_id] = ctx.decisions[test_id].model_copy(
            update={"estimated_seconds": seconds[test_id], "shard": shard_of[test_id]})
    ctx.tests = kept
    ctx.shard_lists = shards
    ctx.funnel["selected"] = len(kept)
    ctx.funnel["selected_functions"] = len({parents.get(test_id, test_id) for test_id in kept})


def start_collector(ctx: SelectContext) -> EarlyCollector | None:
    """Stage 4's collecting interpreter, started once stage 1 has named the to-ref, so that its
    imports (about 5 s on one core) overlap stages 2 and 3. None when stage 4 will not start one:
    a caller's runner collects, or this environment collected the tree before (the cache answers)."""
    if ctx.pytest_runner is not None or ctx.to_sha is None:
        return None
    cache = open_collect_cache(ctx.source, ctx.to_sha)
    return None if cache is not None and cache.holds_any() else EarlyCollector()


class VerifyStage:
    name = "verify"

    def run(self, ctx: SelectContext) -> None:
        live = ctx.live()
        files = sorted({parse(test_id).file for test_id in live} | self._pattern_files(ctx))
        ctx.say(self.name, f"collecting {len(files)} files on spyre")
        # without the rules: every exclusion is then decided below, with its file:line
        # a caller's runner may be another interpreter: only the default one's collections are kept
        cache = open_collect_cache(ctx.source, ctx.to_sha) if files and ctx.pytest_runner is None else None
        collected = collect_cached(cache, ctx.checkout_to(), files, runner=ctx.pytest_runner,
                                   early=ctx.collector) if files else Collected()
        ctx.funnel["collected"] = len(collected.ids)  # every spyre test of those files
        matcher = VariantMatcher(ctx, files)
        live_set = set(live)
        variants: dict[str, list[str]] = {}
        parents: dict[str, str] = {}
        for test_id in collected.ids:
            parent, suffix = matcher.parent(test_id)
            if parent not in live_set and not self._always_run(ctx, test_id, parent):
                continue
            live_set.add(parent)
            candidate = ctx.candidates.get(parent)
            if suffix and candidate is not None and candidate.ops and suffix not in _op_names(candidate.ops):
                continue  # a variant for an op this change does not touch
            variants.setdefault(parent, []).append(test_id)
            parents[test_id] = parent
        self._resolve(ctx, sorted(live_set), variants, collected)
        modes = {i: self._variant_mode(ctx, i) for i in sorted(parents)}
        selected = [i for i, mode in modes.items() if mode not in DROP_MODES]
        self._dtype_risk(ctx, selected, modes)
        ctx.funnel["verified"] = len(selected)
        schedule(ctx, self.name, selected, parents)
        ctx.say(self.name, f"{ctx.funnel['verified']} verified, {len(ctx.tests)} selected", len(live), len(live))

    @staticmethod
    def _pattern_files(ctx: SelectContext) -> set[str]:
        files = {pattern.split("::")[0] for pattern, _ in ctx.always_run_patterns}
        return {f for f in files if not any(ch in f for ch in "*?[") and (ctx.checkout_to() / f).is_file()}

    @staticmethod
    def _always_run(ctx: SelectContext, test_id: str, parent: str) -> bool:
        """Select a collected test an always-run pattern names (once per parent)."""
        if parent in ctx.decisions:
            return False
        for pattern, where in ctx.always_run_patterns:
            if fnmatch.fnmatchcase(parent, pattern) or fnmatch.fnmatchcase(test_id, pattern):
                ctx.must_run.add(parent)
                ctx.select(parent, "rules", f"Selected: always-run rule '{pattern}'.", rule=where,
                           evidence=[Evidence(rule=where, detail="always-run rule in testdefs")])
                return True
        return False

    def _resolve(self, ctx: SelectContext, live: list[str], variants: dict[str, list[str]], collected: Collected) -> None:
        """Replace each normalised decision by its collected variants, or drop it with the reason."""
        for test_id in live:
            parent = ctx.decisions.pop(test_id)
            found = variants.get(test_id)
            if not found:
                file = parse(test_id).file
                error = collected.errors.get(file)
                why = (f"collection of {file} failed on spyre: {error}" if error
                       else "no spyre variant was collected (restricted to other devices, every variant "
                            "excluded by testdefs, or the test no longer exists)")
                ctx.decisions[test_id] = parent.model_copy(update={
                    "selected": False, "stage": self.name, "reason": f"Dropped: {why}.",
                    "rule": parent.rule or "collect-only"})
                continue
            reasons = ReasonsByOp(parent.evidence)
            for variant in found:
                ctx.decisions[variant] = parent.model_copy(update={
                    "test_id": variant, "stage": self.name, "evidence": reasons.for_variant(variant),
                    "reason": f"{parent.reason} Collected on spyre as {variant.split('::')[-1]}."})

    @staticmethod
    def _dtype_risk(ctx: SelectContext, ids: list[str], modes: dict[str, str]) -> None:
        """Raise the risk of a variant in a dtype spyre does not support, or of a test whose traced
        change brings such a dtype into code it runs (unless a rule expects the failure)."""
        config = getattr(ctx.rules, "global_config", None)
        supported = set(config.dtype_names()) if config is not None else set()
        if not supported:
            return
        scanner = ChangeDtypeScanner(ctx.checkout_to(), unsupported_dtypes(supported))
        where_rules = config.ref or "testdefs global"
        for test_id in ids:
            decision = ctx.decisions[test_id]
            if modes.get(test_id) in XFAIL_MODES:  # an expected failure is no news
                continue
            outside = [d for d in parse(test_id).dtypes if d not in supported]
            if outside:
                ctx.outside_dtypes.add(test_id)
                why = f"{', '.join(outside)} is outside spyre's supported dtypes ({where_rules})"
            elif brought := scanner.brought_by(decision.evidence, test_id):
                dtype, where = next(iter(brought.items()))
                why = f"the change brings {dtype} into code it runs ({where}), outside spyre's supported dtypes"
            else:
                continue
            ctx.decisions[test_id] = decision.model_copy(update={
                "score": round(min(1.0, (decision.score or 0.0) + DTYPE_RISK), 4),
                "reason": f"{decision.reason} Risk raised: {why}.",
            })

    def _variant_mode(self, ctx: SelectContext, test_id: str) -> str:
        """The testdefs mode of one collected variant; drops excluded dtypes, marks variant xfails."""
        if ctx.rules is None:
            return "unlisted"
        decision = ctx.rules.decide(test_id, torch_version=ctx.torch_version)
        mode = str(getattr(decision, "mode", ""))
        if mode in DROP_MODES:
            ctx.drop(test_id, self.name, f"Dropped: testdefs mode '{mode}' for this variant: {rule_text(decision)}.",
                     rule=rule_reference(decision))
        elif mode in XFAIL_MODES and "known xfail" not in ctx.decisions[test_id].reason:
            current = ctx.decisions[test_id]
            ctx.decisions[test_id] = current.model_copy(update={
                "reason": f"{current.reason} Known {mode} for this variant: {rule_text(decision)}.",
                "rule": rule_reference(decision) or current.rule})
        return mode


class ReasonsByOp:
    """A test's reasons by the op each names, to give each of its variants those that reach it: one
    OpInfo entry's hunk explains only its own op's variants (an op_db test reached by 500 entries
    would otherwise carry all 500 in every variant). Built once per test, asked once per variant."""

    def __init__(self, evidence: list[Evidence]) -> None:
        self.evidence = evidence
        self.unnamed = [position for position, item in enumerate(evidence) if not item.op]
        self.by_spelling: dict[str, list[int]] = {}
        for position, item in enumerate(evidence):
            if item.op:
                self.by_spelling.setdefault(op_spelling(item.op), []).append(position)

    def for_variant(self, variant: str) -> list[Evidence]:
        """The reasons naming no op or this variant's op; all of them when none does."""
        if not self.by_spelling:
            return self.evidence
        method = variant.rsplit("::", 1)[-1]
        reached = spellings_in(method) & self.by_spelling.keys()
        positions = sorted(self.unnamed + [p for spelling in reached for p in self.by_spelling[spelling]])
        return [self.evidence[p] for p in positions] or self.evidence

