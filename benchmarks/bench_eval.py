"""Selector cost on the demo upstream: each stage's wall time, side by side with the goals and
with the test time the selection saves.

Builds the demo upstream at --scale (copies of unchanged test files grow the suite), runs
the four stages one by one on one context (stage 4 collects on the real spyre device),
then collects the whole suite once, as a full run's collection would, to measure stage 4
at suite size. Goals (issue 6): stages 1-3 under 20 s; stage 4 under 60 s for 4,000 tests;
selector time under 5% of the test time it saves.

Usage: .venv/bin/python benchmarks/bench_eval.py [--scale 5] [--seconds-per-test 1.0]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from relay.demo.generate import init_demo
from selector.agents.sources import test_files
from selector.select import load_rules, open_source
from selector.stages import STAGE_ORDER, stage_for
from selector.stages.base import SelectContext
from selector.stages.collect import collect

RULES = Path(__file__).resolve().parents[1] / "testdefs" / "rules" / "demo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=5)
    parser.add_argument("--seconds-per-test", type=float, default=1.0,
                        help="test time assumed per test with no history (the selector's own default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        upstream = Path(tmp) / "upstream"
        init_demo(upstream, scale=args.scale)
        rules, paths = load_rules(RULES)
        ctx = SelectContext(source=open_source(upstream, Path(tmp) / "cache"), from_ref="2.13", to_ref="2.14",
                            rules=rules, torch_version="2.14")
        timings = {}
        for name in STAGE_ORDER:
            started = time.perf_counter()
            stage_for(name).run(ctx)
            timings[name] = time.perf_counter() - started
        started = time.perf_counter()
        universe = collect(ctx.checkout_to(), test_files(ctx.checkout_to()), paths).ids
        full_collect = time.perf_counter() - started

    selector_total = sum(timings.values())
    first_three = timings["diff"] + timings["rules"] + timings["agent"]
    saved = (len(universe) - len(ctx.tests)) * args.seconds_per_test
    print(f"demo upstream scale {args.scale}: {len(universe)} spyre tests, {len(ctx.tests)} selected "
          f"({len(ctx.tests) / max(1, len(universe)):.1%})")
    print(f"{'measure':<38}{'seconds':>10}{'goal':>10}{'ratio':>10}")
    rows = [("stage 1 diff", timings["diff"], None), ("stage 2 rules", timings["rules"], None),
            ("stage 3 agent (local)", timings["agent"], None), ("stages 1-3", first_three, 20.0),
            (f"stage 4 verify ({len(ctx.tests)} tests)", timings["verify"], None),
            (f"collect whole suite ({len(universe)} tests)", full_collect, 60.0 * len(universe) / 4000),
            ("selector total", selector_total, None)]
    for label, seconds, goal in rows:
        ratio = f"{seconds / goal:.2f}" if goal else ""
        print(f"{label:<38}{seconds:>10.2f}{(f'{goal:.1f}' if goal else ''):>10}{ratio:>10}")
    print(f"{'test time saved (est.)':<38}{saved:>10.0f}")
    print(f"{'selector / saved':<38}{'':>10}{'0.05':>10}{selector_total / saved if saved else float('nan'):>10.3f}")


if __name__ == "__main__":
    main()
