"""The whole four-stage select on a real release diff, stage by stage, beside a baseline commit.

Both sides run the same `relay-cli select` pipeline (the stages in order, then the three
artifacts written) in a fresh child process each, on the same upstream clone, with their own
stage-1 cache filled by one untimed stage-1 run first (the figure docs/benchmarks.md tracks is
the select after stage 1's cache is warm). The baseline is another commit of this repository,
extracted with `git archive` (no worktree); the spyre backend and the venv are shared. The
artifacts of both sides are compared by content, object addresses and each side's cache directory masked.

    git clone ../shared/fixtures/pytorch-upstream/release-1.13-to-2.0.bundle /tmp/pytorch-1.13-2.0
    .venv/bin/python benchmarks/bench_select.py --upstream /tmp/pytorch-1.13-2.0 --baseline 1f2f2c6

Without --baseline only the current tree is measured. Goal (issue 13): the whole select <= 60 s.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ("selection.json", "explanations.json", "funnel.json")

CHILD = r'''
import json, resource, sys, time
from selector import artifacts
from selector.pipeline import to_selection
from selector.select import open_source
from selector.stages import STAGE_ORDER, stage_for
from selector.stages.base import SelectContext
from testdefs import version_from_ref

repo, from_ref, to_ref, cache, out, stages = sys.argv[1:7]
started = time.perf_counter()
ctx = SelectContext(source=open_source(repo, cache), from_ref=from_ref, to_ref=to_ref,
                    torch_version=version_from_ref(to_ref))
seconds = {}
from selector.stages import verify
start_collector = getattr(verify, "start_collector", None)  # as selector.pipeline.run (absent in older trees)
try:
    for name in [s for s in STAGE_ORDER if s in stages.split(",")]:
        begun = time.perf_counter()
        stage_for(name).run(ctx)
        if name == "diff" and "verify" in stages and start_collector is not None:
            ctx.collector = start_collector(ctx)
        seconds[name] = time.perf_counter() - begun
finally:
    if getattr(ctx, "collector", None) is not None:
        ctx.collector.close()
if out != "-":
    begun = time.perf_counter()
    artifacts.write(to_selection(ctx), out)
    seconds["write"] = time.perf_counter() - begun
seconds["total"] = time.perf_counter() - started
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "peak_mib": me.ru_maxrss / 1024, "child_peak_mib": kids.ru_maxrss / 1024,
                  "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, "funnel": ctx.funnel}))
'''


def run_side(tree: Path, repo: Path, refs: tuple[str, str], cache: Path, out: Path | None, stages: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", CHILD, str(repo), *refs, str(cache), str(out or "-"), stages],
                          capture_output=True, text=True, cwd=tree, env=env)
    if done.returncode:
        raise SystemExit(f"select in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def extract(rev: str, into: Path) -> Path:
    """The repository at ``rev`` as plain files (what the baseline side imports)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def digest(path: Path, tmp: str) -> str:
    """Of the artifact's content, whatever its layout (indented or one test per line), with object
    addresses masked (a baseline printed upstream's own `<function ... at 0x7f...>`) and each side's
    own cache directory (error lines quote files of its checkout)."""
    import re

    from selector.stages.collect import ADDRESS

    text = re.sub(re.escape(tmp) + r"/[^/]+/cache/", "<cache>/", ADDRESS.sub("0x?", path.read_text(encoding="utf-8")))
    return hashlib.sha256(json.dumps(json.loads(text), sort_keys=True).encode()).hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, required=True, help="clone of the real release bundle")
    parser.add_argument("--from", dest="from_ref", default="v1.13.0")
    parser.add_argument("--to", dest="to_ref", default="v2.0.0")
    parser.add_argument("--baseline", help="commit to compare with (e.g. main before a change)")
    parser.add_argument("--keep", type=Path, help="copy each side's artifacts into this directory")
    args = parser.parse_args()
    refs = (args.from_ref, args.to_ref)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-select-") as tmp:
        sides = [("this tree", ROOT)]
        if args.baseline:
            sides.insert(0, (f"baseline {args.baseline}", extract(args.baseline, Path(tmp) / "baseline")))
        rows = []
        for name, tree in sides:
            cache, out = Path(tmp) / name.replace(" ", "_") / "cache", Path(tmp) / name.replace(" ", "_") / "out"
            run_side(tree, args.upstream.resolve(), refs, cache, None, "diff")  # fill stage 1's cache, untimed
            rows.append((name, run_side(tree, args.upstream.resolve(), refs, cache, out, "diff,rules,agent,verify"), out))
            print(f"{name}: done", flush=True)
        # the same select again: stage 4's collections are kept (this tree only), the rest is redone
        again = Path(tmp) / "again"
        rows.append(("this tree, again", run_side(ROOT, args.upstream.resolve(), refs,
                                                  Path(tmp) / "this_tree" / "cache", again, "diff,rules,agent,verify"), again))
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        columns = ("diff", "rules", "agent", "verify", "write", "total")
        print(f"{'side':<22}" + "".join(f"{c + ' s':>10}" for c in columns) + f"{'cpu s':>9}{'peak MiB':>10}"
              f"{'pytest MiB':>11}{'verified':>10}{'selected':>10}")
        for name, result, _ in rows:
            s = result["seconds"]
            print(f"{name:<22}" + "".join(f"{s.get(c, 0):>10.1f}" for c in columns) + f"{result['cpu']:>9.1f}"
                  f"{result['peak_mib']:>10.0f}{result['child_peak_mib']:>11.0f}"
                  f"{result['funnel'].get('verified', 0):>10}{result['funnel'].get('selected', 0):>10}")
        if args.keep:
            for name, _, out in rows:
                shutil.copytree(out, args.keep / name.replace(" ", "_").replace(",", ""), dirs_exist_ok=True)
        first = rows[0]
        for name, result, out in rows[1:]:
            print(f"{name}: {first[1]['seconds']['total'] / result['seconds']['total']:.2f}x the speed of {first[0]}; "
                  "artifacts: " + ", ".join(f"{artifact} {'identical' if digest(first[2] / artifact, tmp) == digest(out / artifact, tmp) else 'DIFFER'}"
                                            for artifact in ARTIFACTS))
        for name, result, _ in rows[-2:]:
            total = result["seconds"]["total"]
            print(f"goal, the whole select <= 60 s, {name}: {'met' if total <= 60 else 'not met'} ({total:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
