"""Stage 3 with the local agent on a real git fixture: scores, rationales, additions, safety."""
import pickle

import pytest

from selector.agents.bm25 import BM25, tokens
from selector.agents.sources import mark_enclosing
from selector.hunks import grouped, hunks, new_side, parse_diff
from selector.stages.agent import AgentStage, build_task
from tests.selector.selector_helpers import context_for, make_upstream


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("upstream") / "repo")


def test_hunks_are_read_once_from_the_real_diff(upstream):
    root, from_sha, to_sha = upstream
    ctx = context_for(root, from_sha, to_sha)
    hunks = ctx.hunks()  # what stage 1 diffed: the agent stage reads these, it does not diff again
    mark_enclosing(hunks, root)
    assert {h.file for h in hunks} == {"demo/scaling.py", "test/test_alpha.py"}
    scaling = next(h for h in hunks if h.file == "demo/scaling.py")
    assert "scale_values" in scaling.symbols()
    assert scaling.header.startswith("@@ -")
    assert len(scaling.digest) == 16
    assert [h.header for h in build_task(ctx).hunks] == [h.header for h in grouped(hunks)]


def test_hunks_closer_than_six_lines_are_grouped_as_git_diff_u3_groups_them():
    old = "".join(f"line {i}\n" for i in range(1, 31))
    new = old.replace("line 3\n", "line three\n").replace("line 9\n", "line nine\n").replace("line 20\n", "")
    found = hunks(old, new, "f.py")
    assert [h.header for h in found] == ["@@ -3,1 +3,1 @@", "@@ -9,1 +9,1 @@", "@@ -20,1 +19,0 @@"]
    merged = grouped(found)
    assert [h.header for h in merged] == ["@@ -3,7 +3,7 @@", "@@ -20,1 +19,0 @@"]
    assert merged[0].removed == ["line 3", "line 9"] and merged[0].added == ["line three", "line nine"]


def test_parse_diff_handles_new_and_deleted_files():
    text = ("diff --git a/x.py b/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/x.py\n@@ -0,0 +1,2 @@\n"
            "+def fresh_helper():\n+    pass\n"
            "diff --git a/y.py b/y.py\ndeleted file mode 100644\n--- a/y.py\n+++ /dev/null\n@@ -1 +0,0 @@\n"
            "-def gone_helper(): pass\n")
    hunks = [h for found in parse_diff(text).values() for h in found]
    assert [(h.file, h.symbols()) for h in hunks] == [("x.py", {"fresh_helper"}), ("y.py", {"gone_helper"})]
    assert hunks[0].changed_lines == [1, 2]
    assert hunks[1].removed == ["def gone_helper(): pass"]
    assert hunks[1].header == "@@ -1,1 +0,0 @@"  # git's omitted count of 1 spelled out, as evidence shows it


def test_a_hunks_symbols_are_found_line_by_line():
    # the changed lines are scanned as one text: a match must still lie within one line
    text = ("diff --git a/z.py b/z.py\n--- a/z.py\n+++ b/z.py\n@@ -1,0 +1,7 @@\n"
            "+OpInfo(\n+    'spread_name',\n+class\n+Spread\n+    UnaryUfuncInfo('sin_like', dtypes=x),\n"
            "+  \tdef inner_helper(self):\n+- func: my_kernel(Tensor self) -> Tensor\n")
    (hunk,) = parse_diff(text)["z.py"]
    assert hunk.symbols() == {"sin_like", "inner_helper", "my_kernel"}


def test_a_hunk_header_read_back_gives_its_new_side():
    found = hunks("a\nb\nc\n", "a\nB\nC\nD\nc\n")
    assert [new_side(h.header) for h in found] == [(h.new_start, h.new_len) for h in found] == [(2, 3)]
    assert new_side("@@ -7 +9 @@ def f():") == (9, 1)  # git leaves out a count of 1
    assert new_side("@@ -4,2 +3,0 @@") == (3, 0)  # lines only removed
    assert new_side("similar to test_x") is None


def test_difflib_hunks_carry_the_same_lines_as_git_hunks():
    old, new = "a\nb\nc\n", "a\nB\nc\nd\n"
    found = hunks(old, new, "f.py")
    assert [(h.header, h.removed, h.added, h.changed_lines) for h in found] == [
        ("@@ -2,1 +2,1 @@", ["b"], ["B"], [2]), ("@@ -3,0 +4,1 @@", [], ["d"], [4])]


def test_bm25_prefers_the_document_sharing_rare_terms():
    index = BM25({"a": "torch add alpha x", "b": "torch mul x", "c": "torch neg"})
    scores = index.scores("add alpha")
    assert max(scores, key=scores.get) == "a"
    assert "add_relu" in tokens("add_relu") and "relu" in tokens("add_relu")


def test_local_agent_scores_orders_and_adds_what_stage_1_missed(upstream):
    root, from_sha, to_sha = upstream
    ctx = context_for(root, from_sha, to_sha)
    AgentStage().run(ctx)
    added = ctx.decisions["test/test_beta.py::TestBeta::test_scaling"]
    assert added.selected and added.stage == "agent"
    assert "stage 1 missed it" in added.reason and "scale_values" in added.reason
    assert "test/test_beta.py::TestBeta::test_unrelated" not in ctx.decisions
    modified = ctx.decisions["test/test_alpha.py::TestAlpha::test_add"]
    assert "must run" in modified.reason and modified.score > added.score
    assert all(d.reason for d in ctx.decisions.values())
    assert ctx.funnel["triaged"] == 4


def test_agent_never_drops_must_run_even_when_drops_are_allowed(upstream):
    root, from_sha, to_sha = upstream
    ctx = context_for(root, from_sha, to_sha, allow_agent_drop=True)
    AgentStage().run(ctx)
    for test_id in ctx.must_run:
        assert ctx.decisions[test_id].selected


def test_triage_is_deterministic(upstream):
    root, from_sha, to_sha = upstream
    runs = []
    for _ in range(2):
        ctx = context_for(root, from_sha, to_sha)
        AgentStage().run(ctx)
        runs.append([d.model_dump() for _, d in sorted(ctx.decisions.items())])
    assert runs[0] == runs[1]


def test_task_knows_sources_and_pool(upstream):
    root, from_sha, to_sha = upstream
    task = build_task(context_for(root, from_sha, to_sha))
    assert "test/test_alpha.py::TestAlpha::test_sub" in task.tests
    assert "test/test_beta.py::TestBeta::test_scaling" in task.pool
    assert "scale_values" in task.pool["test/test_beta.py::TestBeta::test_scaling"].references


def test_enclosing_definitions_come_from_one_parse_shared_with_stage_4(tmp_path, monkeypatch):
    from selector.agents import sources

    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_m.py").write_text(
        "class TestM:\n    def helper(self):\n        return 1\n\n    def test_a(self):\n        x = 1\n"
        "        return x\n\n\ndef small():\n    pass\n\n\ndef test_b():\n    pass\n")
    parsed = []
    monkeypatch.setattr(sources, "run_pickled", lambda jobs, stores=None: parsed.extend(p for _, p, _ in jobs)
                        or [pickle.dumps(sources.file_facts(p, t)) for _, p, t in jobs])
    shared = sources.ToRefSources(tmp_path)
    found = parse_diff("diff --git a/test/test_m.py b/test/test_m.py\n--- a/test/test_m.py\n+++ b/test/test_m.py\n"
                       "@@ -6,1 +6,1 @@\n-        x = 0\n+        x = 1\n@@ -12,0 +13,1 @@\n+\n"
                       "@@ -14,1 +15,1 @@\n-    return\n+    pass\n")["test/test_m.py"]
    shared.mark_enclosing(found)
    assert [h.enclosing for h in found] == [{"TestM", "test_a"}, set(), {"test_b"}]
    assert shared.tests(["test/test_m.py"]).keys() == {"test/test_m.py::TestM::test_a", "test/test_m.py::test_b"}
    assert shared.class_methods("test/test_m.py") == {"TestM": {"test_a"}, "": {"test_b"}}
    assert parsed == ["test/test_m.py"]  # enclosing spans, tests and methods from one parse


def test_the_to_ref_facts_are_kept_by_blob_id_for_the_next_selection(upstream, tmp_path, monkeypatch):
    from selector.agents import sources
    from selector.upstream.git_source import GitUpstream

    root, _, to_sha = upstream
    source = GitUpstream(root, cache_dir=tmp_path / "cache")
    checkout = source.checkout(to_sha)
    first = sources.ToRefSources(checkout, source, to_sha).tests(["test/test_alpha.py", "test/test_beta.py"])
    monkeypatch.setattr(sources, "run_pickled", lambda jobs, stores=None: pytest.fail(f"parsed again: {[p for _, p, _ in jobs]}"))
    again = sources.ToRefSources(checkout, source, to_sha).tests(["test/test_alpha.py", "test/test_beta.py"])
    assert again.keys() == first.keys() and len(first) > 2
    assert [(t.source, t.references) for t in again.values()] == [(t.source, t.references) for t in first.values()]


def test_definition_spans_are_found_without_entering_expressions_in_ast_walks_order():
    import ast

    from selector.agents.sources import _statements

    tree = ast.parse(
        "def a():\n    def b():\n        pass\n    f = lambda: 0\n"
        "if x:\n    class C:\n        def m(self):\n            pass\nelse:\n    def d(): pass\n"
        "try:\n    pass\nexcept E:\n    def e(): pass\nfinally:\n    def g(): pass\n"
        "match v:\n    case 1:\n        def h(): pass\n"
        "with ctx:\n    async def i(): pass\n"
        "for k in y:\n    class D: pass\n")
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    walked = [n.name for n in ast.walk(tree) if isinstance(n, kinds)]
    assert [n.name for n in _statements(tree) if isinstance(n, kinds)] == walked
    assert sorted(walked) == ["C", "D", "a", "b", "d", "e", "g", "h", "i", "m"]
