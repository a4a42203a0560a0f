"""select() end to end through stage 1 on real git repositories (the fixture and the demo upstream)."""
import json

import pytest

from selector import artifacts
from selector.errors import SelectorError
from selector.select import select
from tests.selector.selector_helpers import make_upstream, write_rules

STAGES = ("diff", "rules", "agent")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    root, _, _ = make_upstream(tmp_path_factory.mktemp("upstream") / "repo")
    return root


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from relay.demo.generate import init_demo

    root = tmp_path_factory.mktemp("demo") / "upstream"
    manifest = init_demo(root)
    return root, manifest


def test_select_through_stage_one_finds_and_explains(upstream, tmp_path):
    rules = write_rules(tmp_path / "rules")
    selection = select(str(upstream), "2.13", "2.14", rules=rules, stages=STAGES, cache_dir=tmp_path / "cache")
    by_id = {d.test_id: d for d in selection.decisions}
    assert selection.from_sha and selection.to_sha
    assert "test/test_alpha.py::TestAlpha::test_add" in selection.tests
    assert not by_id["test/test_alpha.py::TestAlpha::test_sub"].selected  # skip rule
    assert "test/test_beta.py::TestBeta::test_scaling" in selection.tests  # agent addition
    # stage 1 finds test_add, test_sub and the always-run test_mul; the skip rule drops test_sub
    assert selection.funnel["changed"] == 3 and selection.funnel["applicable"] == 2
    assert selection.funnel["upstream_total"] == 7
    assert list(selection.funnel) == ["upstream_total", "changed", "applicable", "triaged", "selected",
                                      "selected_functions"]
    # without stage 4 the selection is test functions: both counts agree
    assert selection.funnel["selected_functions"] == selection.funnel["selected"] == len(selection.tests)


def test_same_inputs_give_byte_identical_artifacts(upstream, tmp_path):
    rules = write_rules(tmp_path / "rules")
    blobs = []
    for n in range(2):
        selection = select(str(upstream), "2.13", "2.14", rules=rules, stages=STAGES, shards=2,
                           cache_dir=tmp_path / "cache")
        paths = artifacts.write(selection, tmp_path / f"out{n}")
        blobs.append({k: p.read_bytes() for k, p in paths.items()})
    assert blobs[0] == blobs[1]


def test_stage_order_and_budget_are_checked(upstream, tmp_path):
    with pytest.raises(SelectorError, match="must include 'diff'"):
        select(str(upstream), "2.13", "2.14", stages=("rules",))
    with pytest.raises(SelectorError, match="unknown stage 'triage'"):
        select(str(upstream), "2.13", "2.14", stages=("diff", "triage"))
    with pytest.raises(SelectorError, match="--budget 25%"):
        select(str(upstream), "2.13", "2.14", budget="a quarter")


def test_demo_regressions_survive_rules_and_agent(demo, tmp_path):
    root, manifest = demo
    selection = select(str(root), "2.13", "2.14", rules="testdefs/rules/demo", stages=STAGES,
                       cache_dir=tmp_path / "cache")
    for regression in manifest["expected_regressions"]:
        assert regression["test"] in selection.tests
    explained = json.loads(artifacts.write(selection, tmp_path / "out")["explanations.json"].read_text())
    assert all(entry["reason"] for entry in explained["tests"])
    expected = {t if isinstance(t, str) else t["test"] for tests in manifest["candidates"].values() for t in tests}
    assert selection.funnel["changed"] == len(expected)
