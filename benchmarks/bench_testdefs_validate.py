"""`relay-cli testdefs validate` on a 20 MB rules file and on a YAML alias bomb, with time and peak memory.

Writes a valid rules file of --megabytes MB (file sections with entries of the shape real rules
have: match lists, structured reasons, dtype filters), then runs, each in a fresh interpreter:

- ``libyaml load``: ``yaml.load(text, CSafeLoader)`` alone, the floor for reading that much YAML;
- ``validate``: ``relay-cli testdefs validate FILE`` (safe loading, limits, schema, conflicts);
- ``alias bomb``: ``relay-cli testdefs validate`` on ten lines whose anchors expand to 10^10 nodes.

It prints seconds and peak RSS for each, and the ratios validate / libyaml load. The issue's goals:
the 20 MB file validates in <= 10 s and <= 300 MB, and the bomb fails fast with a clear error.

Usage: .venv/bin/python benchmarks/bench_testdefs_validate.py [--megabytes 20]
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 10.0
GOAL_MB = 300.0
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(9))


def write_rules(path: Path, megabytes: float) -> int:
    """A valid rules file of about ``megabytes`` MB; returns the number of entries."""
    target = int(megabytes * 1e6)
    entries = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("version: 1\nglobal:\n  supported_dtypes: [float16, bfloat16, float32, int64, bool]\n"
                  "  exclude_unsupported: true\nfiles:\n")
        section = 0
        while out.tell() < target:
            out.write(f"  - path: test/generated/test_file_{section}.py\n    unlisted_test_mode: mandatory_success\n"
                      "    note: generated for the validate benchmark\n    entries:\n")
            for k in range(200):
                out.write(f"      - match: [TestClass{k % 7}::test_case_{section}_{k}_a, TestClass{k % 7}::test_case_{section}_{k}_b,\n"
                          f"                TestClass{k % 7}::test_case_{section}_{k}_c]\n"
                          "        mode: xfail\n"
                          "        reason:\n          category: unsupported_op\n"
                          f"          text: \"NotImplementedError: Could not run 'aten::op_{k}.out' with arguments from the 'PrivateUse1' backend\"\n"
                          f"          issue: https://github.com/torch-spyre/torch-spyre/issues/{1000 + k}\n"
                          + ("        dtypes: {include: [float16, int64]}\n" if k % 3 == 0 else ""))
                entries += 1
            section += 1
    return entries


# Each measured command runs in a fresh interpreter that reports its own peak RSS on exit.
_WRAPPER = """
import atexit, resource, sys
atexit.register(lambda: print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))
what, path = sys.argv[1], sys.argv[2]
if what == "libyaml":
    import yaml
    yaml.load(open(path, encoding="utf-8").read(), yaml.CSafeLoader)
else:
    from relay.cli import main
    sys.exit(main(["testdefs", "validate", path]))
"""


def measure(what: str, path: Path) -> tuple[float, float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit status, last error line) for one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.run([sys.executable, "-c", _WRAPPER, what, str(path)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = process.stderr.strip().splitlines()
    peak = next((int(line.split()[1]) / 1024 for line in lines if line.startswith("PEAK_KB")), float("nan"))
    errors = [line for line in lines if not line.startswith("PEAK_KB")]
    return seconds, cpu, peak, process.returncode, (errors or [""])[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-testdefs-") as tmp:
        rules = Path(tmp, "big.yaml")
        entries = write_rules(rules, args.megabytes)
        bomb = Path(tmp, "bomb.yaml")
        bomb.write_text(BOMB, encoding="utf-8")
        size = rules.stat().st_size / 1e6
        print(f"rules file: {size:.1f} MB, {entries:,} entries; alias bomb: {len(BOMB)} bytes, 10^10 nodes expanded")
        results = {}
        for label, what, path in (("alias bomb", "validate", bomb), ("libyaml load", "libyaml", rules),
                                  ("validate", "validate", rules)):
            results[label] = measure(what, path)
            seconds, cpu, peak, status, last = results[label]
            print(f"{label:>13}: {seconds:7.2f} s wall {cpu:7.2f} s CPU  peak {peak:7.1f} MB  exit {status}  {last[:100]}")
    load_s, load_cpu, load_mb, _, _ = results["libyaml load"]
    val_s, val_cpu, val_mb, val_status, _ = results["validate"]
    bomb_s, _, _, bomb_status, bomb_last = results["alias bomb"]
    print(f"ratio validate / libyaml load: wall {val_s / load_s:.2f}x, CPU {val_cpu / load_cpu:.2f}x, "
          f"peak memory {val_mb / load_mb:.2f}x")
    ok = val_status == 0 and val_s <= GOAL_SECONDS and val_mb <= GOAL_MB
    bomb_ok = bomb_status == 2 and "nodes" in bomb_last and bomb_s <= GOAL_SECONDS
    print(f"goal {args.megabytes:g} MB in <= {GOAL_SECONDS:.0f} s and <= {GOAL_MB:.0f} MB: {'met' if ok else 'NOT met'}; "
          f"alias bomb fails fast with a clear error: {'yes' if bomb_ok else 'NO'}")
    return 0 if ok and bomb_ok else 1


if __name__ == "__main__":
    sys.exit(main())
