"""Artifacts: selection/explanations/funnel JSON, byte-identical for the same inputs."""
import json

import pytest

from selector import artifacts
from selector.budget import Budget
from selector.pipeline import to_selection
from selector.stages.agent import AgentStage
from selector.stages.rules import RulesStage
from selector.stages.verify import schedule
from testdefs import load_rules
from tests.selector.selector_helpers import context_for, make_upstream, report_for, write_rules


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("upstream") / "repo")


def selection_for(upstream, tmp_path, **options):
    root, from_sha, to_sha = upstream
    rules_path = write_rules(tmp_path / "rules")
    ctx = context_for(root, from_sha, to_sha, rules=load_rules([rules_path]), torch_version="2.14", **options)
    ctx.report = report_for(root, from_sha, to_sha, tmp_path / "cache")
    RulesStage().run(ctx)
    AgentStage().run(ctx)
    live = ctx.live()
    schedule(ctx, "agent", live, {i: i for i in live})
    return to_selection(ctx)


def test_artifacts_are_byte_identical_across_runs(upstream, tmp_path):
    outputs = []
    for n in range(2):
        paths = artifacts.write(selection_for(upstream, tmp_path / f"in{n}"), tmp_path / f"out{n}")
        outputs.append({name: path.read_bytes() for name, path in paths.items()})
    assert outputs[0].keys() == {"selection.json", "explanations.json", "funnel.json"}
    # the only input difference is the rules file location, which the explanations name
    normalise = lambda data: data.replace(b"/in0/", b"/inN/").replace(b"/in1/", b"/inN/")  # noqa: E731
    assert {k: normalise(v) for k, v in outputs[0].items()} == {k: normalise(v) for k, v in outputs[1].items()}


def test_every_considered_test_is_explained(upstream, tmp_path):
    selection = selection_for(upstream, tmp_path, shards=2)
    out = artifacts.write(selection, tmp_path / "out")
    explained = json.loads(out["explanations.json"].read_text())["tests"]
    assert {e["test_id"] for e in explained} == {d.test_id for d in selection.decisions}
    for entry in explained:
        assert entry["stage"] in ("diff", "rules", "agent", "verify") and entry["reason"]
        assert (entry["position"] is not None) == entry["selected"]
        if not entry["selected"]:
            assert entry["rule"]
    chosen = json.loads(out["selection.json"].read_text())
    assert chosen["tests"] == selection.tests and len(chosen["shards"]) == 2
    assert sorted(t for s in chosen["shards"] for t in s) == sorted(chosen["tests"])
    funnel = json.loads(out["funnel.json"].read_text())
    assert funnel["changed"] >= funnel["applicable"] - 2  # rules add always-run and history tests
    assert funnel["selected"] == len(chosen["tests"])


def test_budget_cuts_are_recorded_as_drops(upstream, tmp_path):
    selection = selection_for(upstream, tmp_path, budget=Budget(fraction=0.25))
    cut = [d for d in selection.decisions if d.rule == "budget"]
    # must-run tests survive any budget; only the agent's addition can be cut
    assert [d.test_id for d in cut] == ["test/test_beta.py::TestBeta::test_scaling"]
    assert "Dropped by the budget (25% of the candidates)" in cut[0].reason
    assert "test/test_beta.py::TestBeta::test_scaling" not in selection.tests


def test_explanations_hold_one_test_per_line(upstream, tmp_path):
    # a release's explanations.json lists ~74,000 tests: one line each, to grep a test's record out of
    selection = selection_for(upstream, tmp_path)
    text = artifacts.write(selection, tmp_path / "out")["explanations.json"].read_text()
    lines = text.splitlines()
    records = [json.loads(line.strip().rstrip(",")) for line in lines if line.startswith('    {"')]
    assert [r["test_id"] for r in records] == [d.test_id for d in selection.decisions]
    assert json.loads(text)["tests"] == records
    assert lines[0] == "{" and lines[-1] == "}" and text.endswith("}\n")
