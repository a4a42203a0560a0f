"""The llm agent against a local server speaking the chat-completions API over real HTTP."""
import pytest

from selector.agents.llm import LLMAgent, LLMUnavailable
from selector.stages.agent import AgentStage
from tests.selector.llm_server import FakeModel, serve
from tests.selector.selector_helpers import context_for, make_upstream

ADD = "test/test_alpha.py::TestAlpha::test_add"
SUB = "test/test_alpha.py::TestAlpha::test_sub"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("upstream") / "repo")


@pytest.fixture()
def model():
    fake = FakeModel()
    server, url = serve(fake)
    fake.url = url
    yield fake
    server.shutdown()
    server.server_close()


def run_llm(upstream, model, tmp_path, **options):
    root, from_sha, to_sha = upstream
    ctx = context_for(root, from_sha, to_sha, agent="llm",
                      agent_options={"base_url": model.url, "cache_dir": tmp_path / "cache", "timeout": 5, **options})
    AgentStage().run(ctx)
    return ctx


def test_verdicts_come_from_tool_calls_and_carry_rationales(upstream, model, tmp_path):
    ctx = run_llm(upstream, model, tmp_path)
    add = ctx.decisions[ADD]
    assert "affected, risk 0.90" in add.reason and "calls torch.add" in add.reason
    sub = ctx.decisions[SUB]
    assert "not affected" in sub.reason and sub.selected  # must-run: kept anyway
    assert add.score > sub.score
    # the model really used the tools: the second request carried the test source
    sources = [m["content"] for body in model.requests for m in body["messages"] if m["role"] == "tool"]
    assert any("def test_add" in s for s in sources) and any(s.startswith("test/test_alpha.py @@") for s in sources)


def test_verdicts_are_cached_by_hunk_and_test(upstream, model, tmp_path):
    run_llm(upstream, model, tmp_path)
    first = len(model.requests)
    assert first > 0
    again = run_llm(upstream, model, tmp_path)
    assert len(model.requests) == first  # every verdict came from the cache
    assert "calls torch.add" in again.decisions[ADD].reason


@pytest.mark.parametrize("mode,why", [("error", "request failed"), ("slow", "timed out"), ("garbage", "invalid verdict")])
def test_errors_select_the_test_and_say_why(upstream, model, tmp_path, mode, why):
    model.mode = mode
    model.delay = 1.0
    ctx = run_llm(upstream, model, tmp_path, timeout=0.5, allow_drop=True)
    for test_id in (ADD, SUB):
        decision = ctx.decisions[test_id]
        assert decision.selected
        assert "llm unavailable (" in decision.reason and "selected to stay safe" in decision.reason
    reasons = sorted(d.reason for d in ctx.decisions.values())
    assert sum(f"({why}" in r for r in reasons) == 3  # three failures, then the agent stops asking
    assert any("skipped after 3 failed requests in a row" in r for r in reasons)


def test_call_budget_falls_back_to_selecting(upstream, model, tmp_path):
    ctx = run_llm(upstream, model, tmp_path, max_calls=3)
    assert len(model.requests) == 3  # one full conversation, then the budget is spent
    reasons = [d.reason for d in ctx.decisions.values()]
    assert any("call budget of 3 spent" in r for r in reasons)
    assert all(d.selected for d in ctx.decisions.values())


def test_agent_may_drop_unaffected_tests_only_when_allowed_and_not_must_run(upstream, model, tmp_path):
    root, from_sha, to_sha = upstream
    ctx = context_for(root, from_sha, to_sha, agent="llm", allow_agent_drop=True,
                      agent_options={"base_url": model.url, "cache_dir": tmp_path / "c"})
    ctx.must_run.discard(SUB)  # pretend it came from a broad source rule
    AgentStage().run(ctx)
    assert not ctx.decisions[SUB].selected and ctx.decisions[SUB].stage == "agent"
    assert ctx.decisions[ADD].selected


def test_missing_url_is_a_user_error(monkeypatch):
    monkeypatch.delenv("RELAY_LLM_URL", raising=False)
    from selector.errors import SelectorError
    with pytest.raises(SelectorError, match="RELAY_LLM_URL"):
        LLMAgent()


def test_parse_rejects_out_of_range_risk():
    with pytest.raises(LLMUnavailable, match="risk"):
        LLMAgent._parse('{"affected": true, "risk": 2, "rationale": "x"}')
