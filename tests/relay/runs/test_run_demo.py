"""`relay-cli run --from 2.13 --to 2.14` end to end on the demo upstream (real git repo, real device)."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from relay.storage import Explanation, Run, TestResult, session_scope
from testdefs.ids import normalise, parse

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def relay_cli(run_process):
    def run(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
        return run_process([sys.executable, "-m", "relay", *args], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=1800)
    return run


def test_demo_run_reports_the_real_regressions(tmp_path, relay_cli):
    import os

    env = {**os.environ, "RELAY_DATA_DIR": str(tmp_path / "data")}
    env.pop("RELAY_DATABASE_URL", None)
    env.pop("RELAY_BROKER_URL", None)
    upstream, out = tmp_path / "upstream", tmp_path / "out"
    init = relay_cli("demo", "init", str(upstream), cwd=tmp_path, env=env)
    assert init.returncode == 0, init.stderr
    done = relay_cli("run", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream),
                     "--rules", str(ROOT / "testdefs/rules/demo"), "--output", str(out), "--json", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "failed"

    expected = json.loads((upstream / "demo-changeset.json").read_text())["expected_regressions"]
    found = {(normalise(t), parse(t).dtype) for t in outcome["new_failures"]}
    for regression in expected:
        assert (regression["test"], regression["dtype"]) in found, regression

    for name in ("selection.json", "explanations.json", "funnel.json", "results.jsonl", "testdefs-patch.yaml", "junit.xml"):
        assert (out / name).is_file(), name
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    selection = json.loads((out / "selection.json").read_text())
    assert sorted(r["id"] for r in results) == sorted(selection["tests"])
    assert {r["id"] for r in results if r["verdict"] == "new_failure"} == set(outcome["new_failures"])
    assert any(r["sim_stats"] for r in results if r["outcome"] == "passed")  # the simulator's per-test stats

    patch = yaml.safe_load((out / "testdefs-patch.yaml").read_text())
    proposed = {(f["path"], e["match"]) for f in patch["add"] for e in f["entries"]}
    for regression in expected:
        file, cls_method = regression["test"].split("::", 1)
        assert (file, cls_method) in proposed
    # The rules apply where the tests run: the demo's strict xfail now passes and is proposed for
    # promotion; its float64 xfails are xfailed on the device, not failures the verdict excuses.
    assert [p["match"] for p in patch["promote"]] == ["TestUnaryUfuncs::test_sqrt_values"]
    assert [normalise(t) for t in outcome["summary"]["fixed"]] == [
        "test/test_unary_ufuncs.py::TestUnaryUfuncs::test_sqrt_values"]
    assert any(r["outcome"] == "xfailed" for r in results)
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) == len(results)

    database = f"sqlite:///{tmp_path / 'data' / 'relay.db'}"
    with session_scope(database) as session:
        run = session.get(Run, outcome["run_id"])
        assert (run.status, run.from_ref, run.to_ref, run.selected) == ("failed", "2.13", "2.14", len(results))
        assert run.to_sha == selection["to_sha"]
        stored = session.scalars(select(TestResult).where(TestResult.run_id == run.id)).all()
        assert len(stored) == len(results) and all(r.verdict for r in stored)
        assert session.scalars(select(Explanation).where(Explanation.run_id == run.id)).first() is not None
    assert "New failures" in done.stderr
