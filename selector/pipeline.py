"""Run the stages in order over one context and turn it into a ``Selection``."""
from __future__ import annotations

from selector.errors import SelectorError
from selector.model import Selection
from selector.stages import STAGE_ORDER, stage_for
from selector.stages.base import SelectContext
from selector.stages.verify import schedule, start_collector

# counts of test functions first (stages 1-3), then of spyre test ids (stage 4); the last is the
# selection counted as upstream test functions again, so the selected fraction compares like with like
FUNNEL_ORDER = ("upstream_total", "changed", "applicable", "triaged", "collected", "verified", "selected",
                "selected_functions")


def check_stages(stages: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Stages must be known, start with diff and keep the pipeline order."""
    unknown = [s for s in stages if s not in STAGE_ORDER]
    if unknown:
        raise SelectorError(f"unknown stage '{unknown[0]}'", hint=f"expected one of {', '.join(STAGE_ORDER)}")
    ordered = tuple(s for s in STAGE_ORDER if s in stages)
    if not ordered or ordered[0] != "diff":
        raise SelectorError("the stages must include 'diff'", hint="stage 1 finds the candidates every other stage works on")
    return ordered


def run(ctx: SelectContext, stages: tuple[str, ...]) -> Selection:
    try:
        for name in check_stages(stages):
            stage_for(name).run(ctx)
            if name == "diff" and "verify" in stages:
                ctx.collector = start_collector(ctx)
    finally:
        if ctx.collector is not None:  # never left running: stage 4 took it, or it ends here
            ctx.collector.close()
    if "verify" not in stages:  # order and budget the normalised ids instead of collected variants
        live = ctx.live()
        schedule(ctx, stages[-1], live, {i: i for i in live})
    return to_selection(ctx)


def to_selection(ctx: SelectContext) -> Selection:
    chosen = [ctx.decisions[i] for i in ctx.tests]  # execution order
    dropped = sorted((d for d in ctx.decisions.values() if not d.selected), key=lambda d: d.test_id)
    funnel = {key: ctx.funnel[key] for key in FUNNEL_ORDER if key in ctx.funnel}
    return Selection(from_ref=ctx.from_ref, to_ref=ctx.to_ref, from_sha=ctx.from_sha, to_sha=ctx.to_sha,
                     tests=list(ctx.tests), shards=[list(s) for s in ctx.shard_lists],
                     decisions=chosen + dropped, funnel=funnel)
