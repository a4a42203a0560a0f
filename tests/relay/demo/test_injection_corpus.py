"""The regression-injection corpus (issue 13): the selector against changes whose effect on spyre is measured.

One module fixture builds the corpus on the demo upstream, runs the reachable test files on
spyre at the base (once) and at every injected change, and runs the selector on each change.
The bar, for every kind: every breaking change and every newly failing test selected, mean
APFDc >= 0.9 over its changes, nothing beyond the always-run rules for a no-op change.
"""
import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from relay.demo import corpus
from relay.demo.injections import injections
from tests.tiers import starts_processes

pytestmark = pytest.mark.slow  # runs the demo tests on spyre, and relay-cli in subprocesses

REQUIRED_KINDS = {"opinfo_samples", "opinfo_new_entry", "removed_skip", "shared_helper", "helper_via_wrapper",
                  "module_constant", "base_class", "decorator", "parametrize", "rename", "device_framework",
                  "op_implementation", "native_functions", "derivatives"}
NO_OP_KINDS = {"noop_comment", "noop_docstring", "noop_whitespace", "noop_formatting", "noop_cuda_only"}
KINDS = sorted({i.kind for i in injections()})


@pytest.fixture(scope="module")
@starts_processes
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    built = corpus.build(root / "upstream")
    truths = corpus.ground_truth(built)
    return corpus.evaluate(built, truths, rules=str(corpus.DEMO_RULES), cache_dir=root / "cache")


def test_the_corpus_covers_the_kinds_and_every_breaking_change_breaks_spyre(report):
    kinds = Counter(case["kind"] for case in report["cases"] if case["breaking"])
    assert REQUIRED_KINDS <= set(kinds) and sum(kinds.values()) >= 30
    assert {c["kind"] for c in report["cases"] if not c["breaking"]} == NO_OP_KINDS
    assert sum(not c["breaking"] for c in report["cases"]) >= 10
    # measured, not declared: each breaking change fails tests on spyre that passed at the base ...
    assert report["summary"]["breaking_that_did_not_break"] == []
    # ... and no no-op change does
    assert report["summary"]["no_op_that_broke"] == []
    for case in report["cases"]:
        assert case["files_run"], case["name"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_selector_meets_the_bar_per_kind(report, kind):
    [row] = [r for r in report["kinds"] if r["kind"] == kind]
    if row["breaking"]:
        assert (row["change_recall"], row["test_recall"]) == (1.0, 1.0), row
        assert row["apfdc"] >= 0.9, row
    else:
        assert row["selected"] == 0, row  # beyond the always-run rules


def _cli(*args, tmp_path):
    env = {**os.environ, "RELAY_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "relay", "eval", *args], capture_output=True, text=True,
                          timeout=900, env=env)


def test_cli_scores_the_chosen_changes_and_writes_the_artifact(tmp_path):
    done = _cli("--corpus", str(tmp_path / "corpus"), "--only", "impl-linear-decomposed", "--only", "noop-comment-test",
                "--output", str(tmp_path / "out"), "--json", tmp_path=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report == json.loads((tmp_path / "out" / "corpus-eval.json").read_text())
    assert {c["name"] for c in report["cases"]} == {"impl-linear-decomposed", "noop-comment-test"}
    assert report["summary"]["changes_that_broke"] == 1 and report["summary"]["no_op_changes"] == 1
    assert {row["kind"] for row in report["kinds"]} == {"op_implementation", "noop_comment"}
    assert done.returncode == (1 if report["shortfalls"] else 0)


@pytest.mark.parametrize("args, message", [
    (["--only", "no-such-change"], "--only no-such-change: no such injected change"),
    (["--from", "2.13"], "exists and is not empty"),
])
def test_cli_refuses_bad_input_in_one_line(tmp_path, args, message):
    target = tmp_path / "corpus"
    if "--from" in args:
        target.mkdir()
        (target / "something").write_text("mine")
    done = _cli("--corpus", str(target), *args, tmp_path=tmp_path)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
