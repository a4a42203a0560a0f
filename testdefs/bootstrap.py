"""Rules from evidence: run an upstream test file on the device and write a rules file for what fails.

``run_file`` runs the file with pytest under the device test base (no rules), recording each test
as it starts and ends (``bootstrap_recorder``). A test that takes the process down is recorded as
``crashed`` and the run goes on without it. ``rules_for`` groups the failures by failure class (the
first line of the message, numbers and addresses blanked) and writes one entry per class: the
generic tests that fail with it (``Class::method``, narrowed by ``dtypes`` / ``ops`` when only some
of a test's variants fail), mode ``xfail`` (``skip`` for crashes), and a structured reason
(category inferred from the message, the message itself, since the torch version of the run).
Everything else stays ``mandatory_success``. The result is a proposal for a person to review.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testdefs import ids
from testdefs.bootstrap_recorder import RECORD_ENV
from testdefs.matching import formatted_op
from testdefs.reasons import infer_category, reason_dict
from testdefs.schema import Category, Mode

TEST_BASE = Path(__file__).with_name("test_base.py")
FAILED = ("failed", "error", "crashed")


@dataclass
class Result:
    test_id: str
    outcome: str  # passed | failed | error | skipped | crashed
    message: str = ""
    op: str | None = None


@dataclass
class Run:
    results: list[Result] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    attempts: int = 0
    exit_statuses: list[int] = field(default_factory=list)


def run_file(upstream: Path, test_file: str, *, rules: list[Path] = (), timeout: float = 3600,
             max_crashes: int = 20, python: str = sys.executable, env: dict[str, str] | None = None) -> Run:
    """Run ``test_file`` (relative to ``upstream``) on the device; every test gets a result.

    ``rules`` are applied during the run (typically the ``global`` section: variants it excludes
    are not generated, so they need no entry).
    """
    run = Run()
    done: dict[str, Result] = {}
    ops: dict[str, str | None] = {}
    base_env = dict(os.environ if env is None else env)
    for name in ("PYTEST_ADDOPTS", "RELAY_TESTDEFS", "RELAY_TESTDEFS_REPORT", "CI"):
        base_env.pop(name, None)
    base_env.update(TORCH_TEST_DEVICES=str(TEST_BASE), PYTORCH_TESTING_DEVICE_ONLY_FOR="privateuse1")
    with tempfile.TemporaryDirectory(prefix="testdefs-bootstrap-") as tmp:
        while run.attempts <= max_crashes:
            run.attempts += 1
            record = Path(tmp, f"record-{run.attempts}.jsonl")
            command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "testdefs.bootstrap_recorder",
                       f"--rootdir={upstream}", *(f"--testdefs={Path(p).resolve()}" for p in rules),
                       *(f"--deselect={test_id}" for test_id in run.crashed), test_file]
            try:
                process = subprocess.run(command, cwd=upstream, env={**base_env, RECORD_ENV: str(record)},
                                         capture_output=True, text=True, timeout=timeout)
                run.exit_statuses.append(process.returncode)
            except subprocess.TimeoutExpired:
                run.exit_statuses.append(-1)
            started = _read(record, done, ops)
            unfinished = [test_id for test_id in started if test_id not in done]
            if not unfinished:
                break
            for test_id in unfinished:  # the process died while running it
                status = run.exit_statuses[-1]
                done[test_id] = Result(test_id, "crashed", f"the test process ended (exit status {status}) "
                                                         "while running this test")
                run.crashed.append(test_id)
    for test_id, result in done.items():
        result.op = ops.get(test_id)
    run.results = sorted(done.values(), key=lambda r: r.test_id)
    return run


def _read(record: Path, done: dict[str, Result], ops: dict[str, str | None]) -> list[str]:
    started: list[str] = []
    if not record.exists():
        return started
    for line in record.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "collected" in entry:
            ops[entry["collected"]] = entry["op"]
        elif "start" in entry:
            started.append(entry["start"])
        else:
            done[entry["id"]] = Result(entry["id"], entry["outcome"], entry["message"])
    return started


_NUMBER = re.compile(r"0x[0-9a-fA-F]+|\b\d+(\.\d+)?(e[-+]?\d+)?\b")


def failure_class(message: str) -> str:
    """What a failure says, without what varies between variants (numbers, addresses)."""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "no message")
    return _NUMBER.sub("N", first)[:200]


def rules_for(test_file: str, results: list[Result], *, torch_version: str, rule_path: str | None = None) -> dict:
    """A rules document for ``test_file`` proposing an entry per failure class."""
    generics: dict[tuple, list[Result]] = defaultdict(list)  # (class, method, op) -> its variants
    for result in results:
        tid = ids.parse(result.test_id)
        method = tid.method_base
        if result.op and method.endswith("_" + formatted_op(result.op)):
            method = method[: -len(formatted_op(result.op)) - 1]
        generics[(tid.class_base, method, result.op)].append(result)
    groups: dict[tuple, dict] = {}
    for (cls, method, op), variants in sorted(generics.items(), key=lambda kv: (kv[0][0] or "", kv[0][1], kv[0][2] or "")):
        by_class: dict[str, list[Result]] = defaultdict(list)
        for result in variants:
            if result.outcome in FAILED:
                by_class[(result.outcome == "crashed", failure_class(result.message))].append(result)
        whole = len(variants)
        for (crashed, klass), failing in by_class.items():
            dtypes = () if len(failing) == whole else tuple(sorted({d for r in failing for d in ids.parse(r.test_id).dtypes}))
            key = (crashed, klass, dtypes, op)
            group = groups.setdefault(key, {"names": [], "example": failing[0].message, "count": 0})
            name = f"{cls}::{method}" if cls else method
            if name not in group["names"]:
                group["names"].append(name)
            group["count"] += len(failing)
    entries = []
    for (crashed, klass, dtypes, op), group in groups.items():
        text = group["example"].strip().splitlines()[0][:300] if group["example"].strip() else klass
        category = Category.crash if crashed else (infer_category(text) or Category.not_applicable)
        reason = reason_dict(category, text)
        reason["since"] = torch_version
        entry: dict = {"match": group["names"], "mode": (Mode.skip if crashed else Mode.xfail).value, "reason": reason}
        if dtypes:
            entry["dtypes"] = {"include": list(dtypes)}
        if op:
            entry["ops"] = {"include": [op]}
        if category == Category.not_applicable and not crashed:
            entry["tags"] = ["needs_category"]
        entry["note"] = f"{group['count']} variant(s) failed this way"
        entries.append(entry)
    entries.sort(key=lambda e: (e["mode"], e["reason"]["category"], e["reason"]["text"]))
    counts = defaultdict(int)
    for result in results:
        counts[result.outcome] += 1
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
    section = {"path": rule_path or test_file, "unlisted_test_mode": Mode.mandatory_success.value,
               "note": f"generated by relay-cli testdefs bootstrap from a run of {test_file} on spyre with torch "
                       f"{torch_version} on {datetime.date.today().isoformat()}: {summary}",
               "entries": entries}
    return {"version": 1, "files": [section]}


def render(document: dict, test_file: str) -> str:
    header = [f"# Proposed by `relay-cli testdefs bootstrap` from a run of {test_file} on the spyre device.",
              "# One entry per failure class; review each (mode, category, whether to narrow or widen) before use."]
    return "\n".join(header) + "\n" + yaml.safe_dump(document, sort_keys=False, width=4096, allow_unicode=True)
