"""The demo's main job, `relay-cli run`, timed stage by stage (never part of `make test`).

Builds the demo upstream (`relay-cli demo init`) in a temporary directory and runs the README's
command there as a user would, in a fresh process with its own data directory, once per runner
mode, side by side in one invocation:

- warm: each shard forks its test processes from one interpreter that imported torch, op_db
  and the device once (the default);
- cold: a new interpreter per upstream test file and per re-run (RELAY_WARM_RUNNER=false,
  the runner before the fork server).

For each it prints the split the pipeline records in runs.summary["timings"] (resolve, each
selection stage, checkout, test execution, reporting), the interpreter start of `relay-cli`
itself ("environment") and the tests' own time (the sum of their durations), then the goals:
whole run <= 30 s, execution overhead (execution minus the tests' own time) <= the tests' own time.

    .venv/bin/python benchmarks/bench_demo.py [--modes warm,cold] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "testdefs" / "rules" / "demo"
SELECTION = ("resolve", "diff", "rules", "agent", "verify")
GOAL_SECONDS = 30.0


def relay_cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)


def run_demo(workdir: Path, upstream: Path, warm: bool) -> dict:
    data = workdir / ("data-warm" if warm else "data-cold")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env.update(RELAY_DATA_DIR=str(data), RELAY_WARM_RUNNER="true" if warm else "false")
    start = time.perf_counter()
    done = relay_cli("run", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), "--rules", str(RULES),
                     "--json", cwd=workdir, env=env)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"relay-cli run failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    outcome = json.loads(done.stdout)
    summary = outcome["summary"]
    timings = summary["timings"]
    return {"wall": wall, "timings": timings, "tests_seconds": summary["tests_seconds"],
            "executed": summary["executed"], "new_failures": len(outcome["new_failures"]),
            "environment": wall - sum(timings.values())}


def report(mode: str, result: dict) -> None:
    timings = result["timings"]
    selection = sum(timings.get(stage, 0.0) for stage in SELECTION)
    execution = timings.get("run", 0.0)
    overhead = execution - result["tests_seconds"]
    print(f"\n{mode}: {result['executed']} tests, {result['new_failures']} new failures")
    print(f"  {'whole relay-cli run':32} {result['wall']:7.1f} s")
    print(f"  {'environment (interpreter start)':32} {result['environment']:7.1f} s")
    for stage in SELECTION:
        print(f"  {'selection: ' + stage:32} {timings.get(stage, 0.0):7.1f} s")
    print(f"  {'selection total':32} {selection:7.1f} s")
    print(f"  {'checkout':32} {timings.get('checkout', 0.0):7.1f} s")
    print(f"  {'execution':32} {execution:7.1f} s")
    print(f"  {'  tests own time':32} {result['tests_seconds']:7.1f} s")
    print(f"  {'  execution overhead':32} {overhead:7.1f} s")
    print(f"  {'reporting':32} {timings.get('report', 0.0):7.1f} s")
    print(f"  runner throughput: {result['executed'] / execution:.1f} tests/s" if execution else "")
    print(f"  goal whole run <= {GOAL_SECONDS:g} s: {'met' if result['wall'] <= GOAL_SECONDS else 'missed'}; "
          f"goal overhead <= tests' own time: {'met' if overhead <= result['tests_seconds'] else 'missed'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="warm,cold", help="runner modes to time, in this order")
    parser.add_argument("--repeat", type=int, default=1, help="runs per mode (the fastest is reported)")
    args = parser.parse_args()
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        workdir = Path(tmp)
        upstream = workdir / "demo-upstream"
        subprocess.run([sys.executable, "-m", "relay", "demo", "init", str(upstream)], check=True, capture_output=True)
        best: dict[str, dict] = {}
        for _ in range(args.repeat):
            for mode in modes:  # interleaved, so a change in machine load hits both modes alike
                result = run_demo(workdir, upstream, warm=mode == "warm")
                if mode not in best or result["wall"] < best[mode]["wall"]:
                    best[mode] = result
        print(f"load average before/after: {os.getloadavg()[0]:.1f}")
        for mode in modes:
            report(mode, best[mode])
        if {"warm", "cold"} <= best.keys():
            warm, cold = best["warm"], best["cold"]
            print(f"\nwarm vs cold: whole run {cold['wall'] / warm['wall']:.2f}x faster, "
                  f"execution {cold['timings']['run'] / warm['timings']['run']:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
