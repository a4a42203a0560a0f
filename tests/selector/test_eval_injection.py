"""The injection corpus machinery: anchored edits committed one branch per change, and scoring per kind."""
import git
import pytest

from selector.eval.corpus import always_run, by_kind, score_case
from selector.eval.injection import Edit, Injection, InjectionError, Move, build_corpus
from selector.model import Decision, Evidence, Selection
from tests.selector.selector_git_helpers import RepoBuilder

HELPER = "def make(x):\n    return x.float()\n"
TEST = "from helpers import make\n\n\ndef test_a():\n    assert make(1)\n"


@pytest.fixture
def upstream(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/helpers.py": HELPER, "test/test_a.py": TEST})
    builder.commit("base", tag="base")
    return builder.repo


def _float64(name="helper-float64"):
    return Injection(name, "shared_helper", True, "make computes in double",
                     (Edit("test/helpers.py", "x.float()", "x.double()"),))


def test_each_injection_is_one_commit_on_the_base(upstream):
    moved = Injection("move", "rename", True, "rename the test file",
                      (Move("test/test_a.py", "test/test_b.py"), Edit("test/test_b.py", "def test_a", "def test_b")))
    cases = build_corpus(upstream.working_tree_dir, "base", [_float64(), moved])
    base = upstream.commit("base")
    for case in cases:
        commit = upstream.commit(case.injection.branch)
        assert commit.hexsha == case.sha and commit.parents == (base,) and case.base_sha == base.hexsha
    assert upstream.git.show("inject/helper-float64:test/helpers.py") == HELPER.replace("float", "double").rstrip()
    diff = upstream.git.diff("--name-status", "-M", "base", "inject/move").split()
    assert diff[0].startswith("R") and diff[1:] == ["test/test_a.py", "test/test_b.py"]
    assert "def test_b" in upstream.git.show("inject/move:test/test_b.py")
    assert not upstream.is_dirty() and upstream.head.commit == base  # the checkout is left as it was


def test_same_corpus_same_shas(tmp_path, upstream):
    first = build_corpus(upstream.working_tree_dir, "base", [_float64()])[0].sha
    clone = git.Repo.clone_from(upstream.working_tree_dir, tmp_path / "clone")
    assert build_corpus(clone.working_tree_dir, "base", [_float64()])[0].sha == first


@pytest.mark.parametrize("anchor, found", [("x.int()", 0), ("x", 2)])
def test_an_anchor_must_occur_exactly_once(upstream, anchor, found):
    bad = Injection("bad", "shared_helper", True, "?", (Edit("test/helpers.py", anchor, "y"),))
    with pytest.raises(InjectionError, match=f"test/helpers.py: anchor .* found {found} times"):
        build_corpus(upstream.working_tree_dir, "base", [bad])
    assert not upstream.is_dirty()


def test_injection_names_are_unique(upstream):
    with pytest.raises(InjectionError, match="unique: helper-float64"):
        build_corpus(upstream.working_tree_dir, "base", [_float64(), _float64()])


FAIL = "test/test_a.py::TestAPRIVATEUSE1::test_x_spyre_float64"
OTHER = "test/test_a.py::TestAPRIVATEUSE1::test_y_spyre_float32"
ALWAYS = "test/test_torch.py::TestTorchPRIVATEUSE1::test_basics_spyre_float32"
UNSELECTED = "test/test_a.py::TestASPYRE::test_w_spyre_float32"
REACHED = [FAIL, OTHER.replace("PRIVATEUSE1", "SPYRE"), UNSELECTED]


def _selection(tests):
    decisions = [Decision(test_id=ALWAYS, selected=True, stage="rules", reason="always run",
                          evidence=[Evidence(detail="always-run rule"), Evidence(detail="similarity 0.2")])]
    decisions += [Decision(test_id=t, selected=True, stage="verify", reason="changed") for t in tests if t != ALWAYS]
    return Selection(from_ref="a", to_ref="b", tests=tests, decisions=decisions)


def test_scores_count_what_the_selection_caught_beyond_always_run():
    caught = score_case("c1", "shared_helper", True, [FAIL], _selection([FAIL, ALWAYS, OTHER]), REACHED)
    assert always_run(_selection([ALWAYS])) == {ALWAYS}
    assert (caught.caught, caught.caught_tests, caught.selected, caught.selected_failing) == (True, 1, 2, 1)
    # the run of everything reached, selection first: the failure is the first of 4 tests of equal cost
    assert caught.apfdc == pytest.approx(1 - 0.5 / 4)
    missed = score_case("c2", "shared_helper", True, [FAIL, "test/test_a.py::TestA::test_z"], _selection([ALWAYS]), REACHED)
    assert missed.caught_tests == 0 and missed.apfdc == 0 and FAIL in missed.missed
    quiet = score_case("n1", "noop_comment", False, [], _selection([ALWAYS]), REACHED)
    assert quiet.selected == 0 and quiet.apfdc is None
    [helper, noop] = by_kind([caught, missed, quiet])
    assert (helper["kind"], helper["changes_caught"], helper["changes_that_broke"]) == ("shared_helper", 1, 2)
    assert (helper["test_recall"], helper["precision"], helper["apfdc_min"]) == (0.3333, 0.5, 0.0)
    assert (noop["kind"], noop["breaking"], noop["selected"], noop["precision"]) == ("noop_comment", False, 0, None)
