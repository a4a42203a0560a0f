"""Stage 1 wall time, CPU time and peak memory on a real release diff (and the demo upstream).

Side by side in one run: blobs read through one persistent `git cat-file --batch` (what stage 1
does) versus one `git show` process per file with no cache (the naive way); then stage 1 again
with the caches the first run filled ("warm": inventories and verdicts by blob id, the diff kept
per pair of commits). Each measurement runs in a fresh child process so its peak RSS is its own.

    git clone ../shared/fixtures/pytorch-upstream/release-1.13-to-2.0.bundle /tmp/pytorch-1.13-2.0
    .venv/bin/python benchmarks/bench_stage1.py --upstream /tmp/pytorch-1.13-2.0 [--from v1.13.0 --to v2.0.0]

Without --upstream only the demo upstream is measured.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, resource, subprocess, sys, time
from pathlib import Path
from selector.changes import analyse
from selector.upstream import open_upstream
from selector.upstream.git_source import GitUpstream

class PerFileGit(GitUpstream):
    """The naive baseline: a git process per file read, and nothing cached."""
    def blob_id(self, sha, path):
        return None
    def read_file(self, sha, path):
        done = subprocess.run(["git", "-C", str(self.path), "show", f"{sha}:{path}"], capture_output=True)
        return None if done.returncode or b"\0" in done.stdout[:8192] else done.stdout.decode("utf-8", "replace")
    def read_files(self, sha, paths):
        return {p: self.read_file(sha, p) for p in paths}

repo, mode, rules, from_ref, to_ref, cache = sys.argv[1:7]
cache = Path(cache)
source = open_upstream(repo, cache_dir=cache) if mode == "batch" else PerFileGit(Path(repo), cache_dir=cache)
ruleset = None
if rules != "-":
    from testdefs.loader import load_rules
    ruleset = load_rules(rules)
start = time.perf_counter()
report = analyse(source, from_ref, to_ref, rules=ruleset)
seconds = time.perf_counter() - start
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
                  "peak_mib": max(me.ru_maxrss, kids.ru_maxrss) / 1024,
                  "candidates": len(report.candidates), "files": len(report.files),
                  "tests_in_tree": report.inventory_to.counts()["tests"]}))
'''


def measure(repo: Path, mode: str, refs: tuple[str, str], cache: Path, rules: str = "-") -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(repo), mode, rules, *refs, str(cache)],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(f"{mode} run on {repo} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, help="clone of the real release bundle (see the docstring)")
    parser.add_argument("--from", dest="from_ref", default="v1.13.0")
    parser.add_argument("--to", dest="to_ref", default="v2.0.0")
    parser.add_argument("--scale", type=int, default=50, help="demo upstream scale")
    args = parser.parse_args()
    from relay.demo import init_demo

    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo" / "upstream"
        init_demo(demo, scale=args.scale)
        subjects = [(f"demo --scale {args.scale}", demo, ("v2.13.0", "v2.14.0"), str(ROOT / "testdefs/rules/demo"))]
        if args.upstream:
            subjects.append((f"real {args.from_ref}..{args.to_ref}", args.upstream.resolve(),
                             (args.from_ref, args.to_ref), "-"))
        rows = []
        for name, repo, refs, rules in subjects:
            cache = Path(tmp) / "cache" / name.replace(" ", "_")
            naive = measure(repo, "per-file", refs, Path(tmp) / "naive-cache", rules)
            shutil.rmtree(Path(tmp) / "naive-cache", ignore_errors=True)
            batch, warm = measure(repo, "batch", refs, cache, rules), measure(repo, "batch", refs, cache, rules)
            assert batch["candidates"] == naive["candidates"] == warm["candidates"]
            rows.append((name, batch, naive, warm))
        print(f"{'upstream':<26}{'files changed':>14}{'tests in tree':>14}{'candidates':>11}"
              f"{'cold s':>8}{'cold cpu s':>11}{'naive s':>9}{'speed-up':>9}{'warm s':>8}{'warm cpu s':>11}"
              f"{'peak MiB':>9}")
        for name, batch, naive, warm in rows:
            print(f"{name:<26}{batch['files']:>14}{batch['tests_in_tree']:>14}{batch['candidates']:>11}"
                  f"{batch['seconds']:>8.2f}{batch['cpu']:>11.2f}{naive['seconds']:>9.2f}"
                  f"{naive['seconds'] / batch['seconds']:>8.1f}x{warm['seconds']:>8.2f}{warm['cpu']:>11.2f}"
                  f"{batch['peak_mib']:>9.0f}")
        print("goal (real release diff, 2 cores): cold <= 10 s and <= 1 GiB, warm <= 2 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
