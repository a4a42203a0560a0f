"""Stage 1 wall time and peak memory: the demo upstream at scale, and a release-sized synthetic diff.

Side by side in one run: blobs read through one persistent `git cat-file --batch` (what stage 1
does) versus one `git show` process per file (the naive way); then stage 1 again with the
inventory cache the first run filled ("warm"). Each measurement runs in a fresh
child process so peak RSS is its own.

    .venv/bin/python benchmarks/bench_stage1.py [--scale 50] [--files 564] [--tests 52]
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r'''
import json, resource, subprocess, sys, time
from pathlib import Path
from selector.changes import analyse
from selector.upstream import open_upstream
from selector.upstream.git_source import GitUpstream

class PerFileGit(GitUpstream):
    """The naive baseline: a git process per file read."""
    def read_file(self, sha, path):
        done = subprocess.run(["git", "-C", str(self.path), "show", f"{sha}:{path}"], capture_output=True)
        return None if done.returncode or b"\0" in done.stdout[:8192] else done.stdout.decode("utf-8", "replace")
    def read_files(self, sha, paths):
        return {p: self.read_file(sha, p) for p in paths}

repo, mode, rules = sys.argv[1], sys.argv[2], sys.argv[3]
cache = Path(repo).parent / "cache"
source = open_upstream(repo, cache_dir=cache) if mode == "batch" else PerFileGit(Path(repo), cache_dir=cache)
ruleset = None
if rules != "-":
    from testdefs.loader import load_rules
    ruleset = load_rules(rules)
start = time.perf_counter()
report = analyse(source, "v2.13.0", "v2.14.0", rules=ruleset)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "candidates": len(report.candidates), "files": len(report.files),
                  "tests_in_tree": report.inventory_to.counts()["tests"]}))
'''


def measure(repo: Path, mode: str, rules: str = "-") -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(repo), mode, rules], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def synthetic_release(root: Path, files: int, tests: int, changed: int, seed: int = 7) -> None:
    """A PyTorch-sized test tree (files x tests methods) and a release-like diff over ``changed`` files."""
    import git
    rng = random.Random(seed)
    repo = git.Repo.init(root, initial_branch="main")

    def body(i: int, j: int, variant: int = 0) -> str:
        return (f"    @dtypes(torch.float32)\n    def test_case_{j}(self, device, dtype):\n"
                f"        x = torch.ones({i % 7 + 1}, {j % 5 + 1}, device=device, dtype=dtype)\n"
                f"        self.assertEqual(x.sum().item(), {(i % 7 + 1) * (j % 5 + 1) + variant})\n\n")

    header = ("import torch\nfrom torch.testing._internal.common_device_type import dtypes, "
              "instantiate_device_type_tests\nfrom torch.testing._internal.common_utils import TestCase\n\n\n")
    texts = {}
    for i in range(files):
        methods = "".join(body(i, j) for j in range(tests))
        texts[f"test/test_file_{i}.py"] = f"{header}class TestFile{i}(TestCase):\n{methods}\n" \
                                          f"instantiate_device_type_tests(TestFile{i}, globals())\n"
    _commit(repo, root, texts, "v2.13.0")
    for i in rng.sample(range(files), changed):  # ~13% added, ~2% removed, ~6% modified per touched file
        path = f"test/test_file_{i}.py"
        methods = [body(i, j, variant=1 if rng.random() < 0.06 else 0) for j in range(tests)
                   if rng.random() >= 0.02]
        methods += [body(i, tests + k) for k in range(rng.randint(4, 10))]
        texts[path] = f"{header}class TestFile{i}(TestCase):\n{''.join(methods)}\n" \
                      f"instantiate_device_type_tests(TestFile{i}, globals())\n"
    _commit(repo, root, texts, "v2.14.0")


def _commit(repo, root: Path, texts: dict[str, str], tag: str) -> None:
    for path, text in texts.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    repo.index.add(list(texts))
    repo.index.commit(tag, author_date="2026-01-01T00:00:00", commit_date="2026-01-01T00:00:00")
    repo.create_tag(tag)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=50, help="demo upstream scale")
    parser.add_argument("--files", type=int, default=564, help="synthetic test files (1.13->2.0 had 564)")
    parser.add_argument("--tests", type=int, default=52, help="test methods per synthetic file (~29k in all)")
    parser.add_argument("--changed", type=int, default=441, help="synthetic files the release touches")
    args = parser.parse_args()
    from relay.demo import init_demo

    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo" / "upstream"
        init_demo(demo, scale=args.scale)
        release = Path(tmp) / "release" / "upstream"
        release.mkdir(parents=True)
        synthetic_release(release, args.files, args.tests, args.changed)
        rows = []
        for name, repo, rules in (("demo --scale %d" % args.scale, demo, str(ROOT / "testdefs/rules/demo")),
                                  ("release-sized synthetic", release, "-")):
            naive = measure(repo, "per-file", rules)  # first, so its run fills no cache the others use
            shutil.rmtree(repo.parent / "cache", ignore_errors=True)
            batch, warm = measure(repo, "batch", rules), measure(repo, "batch", rules)
            assert batch["candidates"] == naive["candidates"] == warm["candidates"]
            rows.append((name, batch, naive, warm))
        print(f"{'upstream':<26}{'files changed':>14}{'tests in tree':>14}{'candidates':>11}"
              f"{'batch s':>9}{'per-file s':>11}{'speed-up':>9}{'warm s':>8}{'peak MiB':>9}")
        for name, batch, naive, warm in rows:
            print(f"{name:<26}{batch['files']:>14}{batch['tests_in_tree']:>14}{batch['candidates']:>11}"
                  f"{batch['seconds']:>9.2f}{naive['seconds']:>11.2f}{naive['seconds'] / batch['seconds']:>8.1f}x"
                  f"{warm['seconds']:>8.2f}{batch['peak_mib']:>9.0f}")
        print("goal: a release-sized diff under 10 s and 1 GiB on 2 cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
