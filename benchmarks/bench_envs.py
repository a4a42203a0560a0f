"""Per-torch environments, measured side by side in one run (never part of `make test`).

1. Environment creation cold (an empty cache dir: venv, torch, runner packages, the spyre build and
   load check) against warm (the same build again: marker read, lock, fingerprint): a ratio.
2. A version-true run (the to side on another torch's environment, warm, so the from side runs as
   its baseline) against a single-torch run of the same selection: the overhead.

    .venv/bin/python benchmarks/bench_envs.py [--torch /opt/wheels/torch-2.13.0+cpu-...whl]
                                              [--warm-cache .relay/cache]

The torch defaults to the CPU wheel on disk (about 1 GB; a CUDA wheel from the index is 5.5 GB and
only makes the cold number bigger). ``--warm-cache`` names a cache dir whose environment for that
torch exists already (for the run comparison); by default the cold build's one is used. Uses the
demo upstream in a temporary directory. Record the printed lines in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from relay.config import Settings
from relay.envs import EnvManager, parse_torch_value
from relay.runs.pipeline import run_change

CPU_WHEEL = "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def timed(action):
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default=CPU_WHEEL, help="torch build to make an environment for")
    parser.add_argument("--warm-cache", default=None, help="cache dir holding a ready environment for --torch")
    parser.add_argument("--skip-cold", action="store_true", help="only the warm and run measurements")
    args = parser.parse_args()
    build = parse_torch_value(args.torch, field="--torch")
    with tempfile.TemporaryDirectory(prefix="bench-envs-") as tmp:
        tmp = Path(tmp)
        cache = Path(args.warm_cache) if args.warm_cache else tmp / "cache"
        if not args.skip_cold:
            cold, env = timed(lambda: EnvManager(tmp / "cache").ensure(build))
            print(f"environment cold: {cold:.1f} s (torch {env.torch_version}; {env.device.verdict})")
        warm, env = timed(lambda: EnvManager(cache).ensure(build))
        print(f"environment warm: {warm:.2f} s (reused: {env.reused})")
        if not args.skip_cold:
            print(f"cold / warm: {cold / warm:.0f}x")

        upstream = tmp / "upstream"
        subprocess.run([sys.executable, "-m", "relay", "demo", "init", str(upstream), "--force"], check=True,
                       capture_output=True)
        rules = Path(__file__).resolve().parents[1] / "testdefs" / "rules" / "demo"

        def run(name: str, **torch) -> float:
            settings = Settings(data_dir=tmp / name, cache_dir=cache)
            seconds, outcome = timed(lambda: run_change(settings, upstream=str(upstream), from_ref="2.13",
                                                        to_ref="2.14", rules=str(rules), **torch))
            executed = outcome.summary.get("executed", 0)
            print(f"{name}: {seconds:.1f} s, {executed} results, status {outcome.status}")
            return seconds

        single = run("single-torch run")
        version_true = run("version-true run", torch_to=args.torch)
        print(f"version-true / single-torch: {version_true / single:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
