"""Stage 2 on real YAML rules and a real inventory: drops name their rule, xfails stay marked."""
import pytest

from selector.history import History
from selector.stages.rules import RulesStage
from testdefs import load_rules
from tests.selector.selector_helpers import context_for, make_upstream, report_for, write_rules

ALPHA = "test/test_alpha.py::TestAlpha::"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("upstream") / "repo")


@pytest.fixture()
def ctx(upstream, tmp_path):
    root, from_sha, to_sha = upstream
    rules_path = write_rules(tmp_path / "rules")
    history = History.from_records([
        {"id": "test/test_beta.py::TestBetaPRIVATEUSE1::test_unrelated_spyre", "outcome": "failed", "duration": 3.0}])
    context = context_for(root, from_sha, to_sha, rules=load_rules([rules_path]),
                          history=history, torch_version="2.14")
    context.report = report_for(root, from_sha, to_sha, tmp_path / "cache")
    RulesStage().run(context)
    return context


def test_device_restricted_test_is_dropped_with_decorator_location(ctx):
    decision = ctx.decisions[ALPHA + "test_cuda_graph"]
    assert not decision.selected and decision.stage == "rules"
    assert "@onlyCUDA restricts it to cuda" in decision.reason
    assert decision.rule.startswith("test/test_alpha.py:") and decision.rule.split(":")[1].isdigit()


def test_skip_mode_drop_names_the_yaml_line(ctx):
    decision = ctx.decisions[ALPHA + "test_sub"]
    assert not decision.selected
    assert "testdefs mode 'skip'" in decision.reason and "aborts the process" in decision.reason
    assert decision.rule.endswith("alpha.yaml:9")


def test_known_xfail_is_kept_and_marked(ctx):
    decision = ctx.decisions[ALPHA + "test_add"]
    assert decision.selected
    assert "known xfail" in decision.reason and decision.rule.endswith("alpha.yaml:12")


def test_always_run_and_history_failures_are_added_as_must_run(ctx):
    mul = ctx.decisions[ALPHA + "test_mul"]
    assert mul.selected and "always-run" in mul.reason
    unrelated = ctx.decisions["test/test_beta.py::TestBeta::test_unrelated"]
    assert unrelated.selected and "failed on spyre" in unrelated.reason
    assert {ALPHA + "test_mul", "test/test_beta.py::TestBeta::test_unrelated"} <= ctx.must_run
    assert ctx.funnel["applicable"] == 3  # add, mul, unrelated


def test_every_dropped_test_names_a_rule(ctx):
    dropped = [d for d in ctx.decisions.values() if not d.selected]
    assert dropped and all(d.rule for d in dropped)


OPS_RULES = """\
version: 1
files:
  - path: test/test_ops_demo.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: TestCommon::test_out
        mode: exclude
        ops: {include: [mul]}
        reason: {category: unsupported_op, text: "mul out= not implemented"}
"""


def test_excluded_ops_are_removed_and_an_all_excluded_test_is_dropped(upstream, tmp_path):
    from selector.model import Candidate, Evidence
    from selector.stages.diff import add_candidate

    root, from_sha, to_sha = upstream
    path = tmp_path / "ops.yaml"
    path.write_text(OPS_RULES)
    ctx = context_for(root, from_sha, to_sha, rules=load_rules([path]), torch_version="2.14")
    for name, ops in (("test_out", ["add", "mul"]), ("test_out_only_mul", ["mul"])):
        add_candidate(ctx, Candidate(test_id=f"test/test_ops_demo.py::TestCommon::{name}", file="test/test_ops_demo.py",
                                     class_name="TestCommon", name=name, change="opinfo", ops=ops,
                                     reasons=[Evidence(file="torch/testing/_internal/common_methods_invocations.py",
                                                       op=ops[-1])]))
    RulesStage().run(ctx)
    kept = ctx.decisions["test/test_ops_demo.py::TestCommon::test_out"]
    assert kept.selected and ctx.candidates["test/test_ops_demo.py::TestCommon::test_out"].ops == ["add"]
    other = ctx.decisions["test/test_ops_demo.py::TestCommon::test_out_only_mul"]
    assert other.selected  # the exact pattern names test_out only: nothing of this test is excluded


def test_test_whose_every_op_is_excluded_is_dropped_with_the_entry_line(upstream, tmp_path):
    from selector.model import Candidate, Evidence
    from selector.stages.diff import add_candidate

    root, from_sha, to_sha = upstream
    path = tmp_path / "ops.yaml"
    path.write_text(OPS_RULES)
    ctx = context_for(root, from_sha, to_sha, rules=load_rules([path]), torch_version="2.14")
    add_candidate(ctx, Candidate(test_id="test/test_ops_demo.py::TestCommon::test_out", file="test/test_ops_demo.py",
                                 class_name="TestCommon", name="test_out", change="opinfo", ops=["mul"],
                                 reasons=[Evidence(op="mul")]))
    RulesStage().run(ctx)
    dropped = ctx.decisions["test/test_ops_demo.py::TestCommon::test_out"]
    assert not dropped.selected and "every op it is parametrized over is excluded" in dropped.reason
    assert dropped.rule.endswith("ops.yaml:6")


def test_a_device_skipped_test_whose_setup_changed_is_kept(upstream, tmp_path):
    """@onlyCUDA skips inside the test, after setUp: a changed setUp still runs (and may fail) on spyre."""
    from selector.changes.functions import BEFORE_SKIPS
    from selector.model import Candidate, Evidence
    from selector.stages.diff import add_candidate

    root, from_sha, to_sha = upstream
    ctx = context_for(root, from_sha, to_sha, torch_version="2.14")
    ctx.report = report_for(root, from_sha, to_sha, tmp_path / "cache")
    for name, detail in (("test_cuda_graph", f"setUp of TestAlpha changed: {BEFORE_SKIPS}"),):
        add_candidate(ctx, Candidate(test_id=ALPHA + name, file="test/test_alpha.py", class_name="TestAlpha",
                                     name=name, change="helper",
                                     reasons=[Evidence(file="test/test_alpha.py", detail=detail)]))
    RulesStage().run(ctx)
    decision = ctx.decisions[ALPHA + "test_cuda_graph"]
    assert decision.selected and "Kept although @onlyCUDA restricts it to cuda" in decision.reason
