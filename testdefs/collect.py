"""Collect the instantiated test ids of upstream files (for `stale`), by running pytest --collect-only.

The collection runs in a fresh interpreter with this package's pytest plugin writing its JSON
report, so each id comes with the OpInfo it was instantiated for, and files that failed to import
are known (their entries are not reported stale: nothing could be checked).
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from testdefs.ruleset import RuleSet


@dataclass
class Collection:
    ids: list[tuple[str, str | None]] = field(default_factory=list)  # (node id, OpInfo name)
    missing_files: list[str] = field(default_factory=list)  # rule paths with no file in the checkout
    errors: list[str] = field(default_factory=list)  # files pytest could not collect
    exit_status: int = 0
    output_tail: str = ""


def files_named_by(rules: RuleSet, upstream: Path) -> tuple[list[str], list[str]]:
    """(existing files relative to upstream, rule paths that name nothing there)."""
    found: list[str] = []
    missing: list[str] = []
    for section in rules.sections:
        matches = sorted(glob.glob(section.path, root_dir=upstream, recursive=True))
        matches = [m for m in matches if (upstream / m).is_file()]
        if matches:
            found.extend(m for m in matches if m not in found)
        else:
            missing.append(section.path)
    return found, missing


def collect(rules: RuleSet, rule_paths: list[str], upstream: Path, *, timeout: float = 900,
            python: str = sys.executable, env: dict[str, str] | None = None) -> Collection:
    files, missing = files_named_by(rules, upstream)
    result = Collection(missing_files=missing)
    if not files:
        return result
    with tempfile.TemporaryDirectory(prefix="testdefs-collect-") as tmp:
        report = Path(tmp, "report.json")
        command = [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                   f"--rootdir={upstream}", f"--testdefs-report={report}"]
        # --opt=value: a separate value naming an existing file would count as a path for the rootdir
        command += [f"--testdefs={Path(path).resolve()}" for path in rule_paths]
        command += files
        run_env = dict(os.environ if env is None else env)
        run_env.pop("PYTEST_ADDOPTS", None)
        try:
            process = subprocess.run(command, cwd=upstream, env=run_env, capture_output=True, text=True,
                                     timeout=timeout)
        except subprocess.TimeoutExpired:
            result.exit_status = -1
            result.output_tail = f"collection did not finish within {timeout:g} s"
            return result
        result.exit_status = process.returncode
        result.output_tail = (process.stdout + process.stderr)[-4000:]
        if report.exists():
            data = json.loads(report.read_text(encoding="utf-8"))
            result.ids = [(test_id, record.get("op")) for test_id, record in sorted(data["decisions"].items())]
            result.errors = list(data.get("collection_errors", []))
    return result
