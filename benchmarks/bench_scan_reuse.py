"""A changed file's second version scanned whole vs around the functions it shares with the first.

Stage 1 scans both versions of every changed test and helper file of a diff. For each such
file of the real release diff, side by side in one run and alternating per file, the CPU time
of scanning the second version after the first: parsed and analysed whole (sharing only the
first's compiled functions, as before) and parsed around the unchanged functions
(``selector/inventory/reuse.py``). Both directions are measured (new after old is what stage 1
does for test files; old after new for helper modules). Every inventory is checked equal to the
whole scan's: the speed-up is only worth having if nothing else changes.

    git clone ../shared/fixtures/pytorch-upstream/release-1.13-to-2.0.bundle /tmp/pytorch-1.13-2.0
    .venv/bin/python benchmarks/bench_scan_reuse.py --upstream /tmp/pytorch-1.13-2.0
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, required=True, help="clone of the real release bundle")
    parser.add_argument("--from", dest="from_ref", default="v1.13.0")
    parser.add_argument("--to", dest="to_ref", default="v2.0.0")
    args = parser.parse_args()
    from selector.changes.classify import classify
    from selector.inventory.scan import PathMemo, scan_file
    from selector.upstream import open_upstream

    with tempfile.TemporaryDirectory() as cache:
        source = open_upstream(str(args.upstream.resolve()), cache_dir=cache)
        old_sha, new_sha = source.resolve(args.from_ref), source.resolve(args.to_ref)
        paths = [c.path for c in source.changed_files(old_sha, new_sha)
                 if c.status == "modified" and classify(c.path) in ("test_file", "test_helper")]
        old, new = source.read_files(old_sha, paths), source.read_files(new_sha, paths)
    whole = around = 0.0
    pairs = differing = 0
    for path in paths:
        if old.get(path) is None or new.get(path) is None:
            continue
        for first, second in ((old[path], new[path]), (new[path], old[path])):
            pairs += 1
            memo = PathMemo()
            scan_file(path, first, memo)
            compiled = dict(memo.code)  # what the first's scan compiled, for each way alike
            start = time.process_time()
            expected = scan_file(path, second, PathMemo(code=memo.code))  # whole, compiled functions shared
            whole += time.process_time() - start
            memo = PathMemo(code=compiled, earlier=memo.earlier)
            start = time.process_time()
            got = scan_file(path, second, memo)
            around += time.process_time() - start
            differing += asdict(got) != asdict(expected)
    print(f"{'second versions':>16}{'whole cpu s':>13}{'around cpu s':>14}{'ratio':>8}{'inventories differing':>23}")
    print(f"{pairs:>16}{whole:>13.2f}{around:>14.2f}{around / whole:>7.2f}x{differing:>23}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
