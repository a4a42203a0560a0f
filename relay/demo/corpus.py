"""The regression-injection corpus on the demo upstream, and its ground truth from running it.

``build`` writes the demo upstream (``relay-cli demo init``), commits the corpus base on top of
v2.13.0 (tag ``corpus-base``: ``test/test_tree_sources.py``, which executes the tree's own
OpInfo entries, functional reference and yaml-declared ops, and what it needs) and one branch
``inject/<name>`` per injected change (``relay/demo/injections.yaml``).

``ground_truth`` runs, on spyre, the test files each change can reach at both refs: the test
files it edits, those importing a helper module it edits (by name, from ``test/``), and those
naming the path of a tree file it edits (the demo's tests import the installed torch, never the
tree's ``torch/``: they reach the tree only by reading a file at its path). The base ref runs
once for all cases. A test is newly failing when it fails at the injected ref and did not fail
at the base (it passed, was skipped, or did not exist).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import git

import testdefs
from relay.demo import injections as demo_injections
from relay.demo.generate import DATA, init_demo
from relay.execution.outcomes import FAILING
from relay.execution.runner.process import UPSTREAM_INI, ForkServer, device_env, run_in_fork
from relay.execution.runner.records import drift_key
from selector.eval.corpus import by_kind, score_case
from selector.eval.injection import AUTHOR, STAMP, Case, Injection, build_corpus
from selector.select import select

BASE_TAG = "corpus-base"
HARNESS = DATA / "corpus"  # files the corpus base adds to the tree
TEST_DIR = "test"
TIMEOUT = 900.0
DEMO_RULES = Path(testdefs.__file__).resolve().parent / "rules" / "demo"  # the always-run rule among them


@dataclass
class Corpus:
    path: Path
    base_sha: str
    cases: list[Case] = field(default_factory=list)


def build(dest: Path, *, only: list[str] | None = None) -> Corpus:
    """The demo upstream at ``dest`` with the corpus base and one branch per injection."""
    init_demo(dest)
    repo = git.Repo(dest)
    repo.git.checkout("--detach", "v2.13.0")
    for edit in demo_injections.harness_edits(dest):
        edit.apply(dest, "corpus base")
    shutil.copytree(HARNESS, dest, dirs_exist_ok=True)
    repo.git.add("--all")
    repo.index.commit("Corpus base: tests that execute the tree's own sources", author=AUTHOR, committer=AUTHOR,
                      author_date=STAMP, commit_date=STAMP)
    repo.git.tag(BASE_TAG)
    base = repo.head.commit.hexsha
    chosen = [i for i in demo_injections.injections() if not only or i.name in only]
    cases = build_corpus(dest, BASE_TAG, chosen)
    repo.close()
    return Corpus(Path(dest), base, cases)


def reach(tree: Path, injection: Injection) -> list[str]:
    """Test files (``test/test_*.py``) the change can reach in ``tree`` (checked out at the change)."""
    names = set()
    direct = set()
    for path in injection.paths:
        if path.startswith(TEST_DIR + "/") and Path(path).name.startswith("test_"):
            direct.add(path)
        elif path.startswith(TEST_DIR + "/"):
            names.add(Path(path).stem)  # a helper module, imported by name from test/
        else:
            names.add(path)  # the tree outside test/ is never imported: a test reaches it by its path
    files = set()
    for candidate in sorted((tree / TEST_DIR).glob("test_*.py")):
        relative = f"{TEST_DIR}/{candidate.name}"
        text = candidate.read_text(errors="replace")
        if relative in direct or any(name in text for name in names):
            files.add(relative)
    return sorted(files)


class SpyreRunner:
    """pytest sessions on spyre, each a fork of one warm interpreter (torch, op_db and the device
    imported once: the corpus runs about a hundred short sessions, tests and collections)."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree.resolve()
        self.test_dir = self.tree / TEST_DIR
        self.env = device_env(self.tree)
        self.server = ForkServer(sys.executable, self.env, self.test_dir)

    def session(self, argv: list[str], cwd: Path, timeout: float = TIMEOUT) -> tuple[int, str]:
        """(exit status, output) of ``pytest argv`` in ``cwd``."""
        ran = run_in_fork(self.server, argv, cwd, timeout)
        if ran is None:  # no warm interpreter: a plain process does the same
            done = subprocess.run([sys.executable, "-m", "pytest", *argv], cwd=cwd, env=self.env,
                                  capture_output=True, text=True, timeout=timeout)
            return done.returncode, done.stdout + done.stderr
        return ran

    def __call__(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """The selector's collection (selector.stages.collect.PytestRunner), in the warm interpreter's
        environment, which is the device's as the collection sets it."""
        returncode, output = self.session(args, cwd, timeout)
        return returncode, output, ""

    def run(self, files: list[str]) -> dict[str, str]:
        """Outcome per test id (``test/...``) of ``files`` run in one pytest session."""
        if not files:
            return {}
        with tempfile.TemporaryDirectory(prefix="relay-corpus-") as tmp:
            report = Path(tmp) / "report.jsonl"
            self.session(["-p", "relay.execution.runner.pytest_plugin", "--relay-report", str(report),
                          "-c", str(UPSTREAM_INI), "--rootdir", str(self.test_dir), "-q", "-p", "no:cacheprovider",
                          "-p", "no:randomly", *(f.removeprefix(TEST_DIR + "/") for f in files)], self.test_dir)
            return _outcomes(report)

    def close(self) -> None:
        self.server.close()


def _outcomes(report: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for line in report.read_text().splitlines() if report.exists() else []:
        event = json.loads(line)
        if event["event"] == "result":
            outcomes[f"{TEST_DIR}/{event['id']}"] = event["outcome"]
        elif event["event"] == "collect_error":  # a file that no longer imports fails as a whole
            outcomes[f"{TEST_DIR}/{event['file']}"] = "error"
    return outcomes


@dataclass
class CaseTruth:
    case: Case
    files: list[str]
    newly_failing: list[str]
    reached: list[str]  # every test of ``files`` at the changed ref


def ground_truth(corpus: Corpus, progress=None) -> list[CaseTruth]:
    repo = git.Repo(corpus.path)
    scopes = {}
    runner = SpyreRunner(corpus.path)
    try:
        for case in corpus.cases:
            repo.git.checkout("--detach", case.sha)
            scopes[case.injection.name] = reach(corpus.path, case.injection)
        repo.git.checkout("--detach", corpus.base_sha)
        every = sorted({f for files in scopes.values() for f in files if (corpus.path / f).is_file()})
        if progress:
            progress(f"base: {len(every)} test files")
        # one session over many files names later classes ...SPYRE, a single file's ...PRIVATEUSE1
        before = {drift_key(t): outcome for t, outcome in runner.run(every).items()}
        out = []
        for case in corpus.cases:
            repo.git.checkout("--detach", case.sha)
            files = scopes[case.injection.name]
            if progress:
                progress(f"{case.injection.name}: {len(files)} test files")
            after = runner.run(files)
            newly = sorted(t for t, outcome in after.items()
                           if outcome in FAILING and before.get(drift_key(t)) not in FAILING)
            out.append(CaseTruth(case, files, newly, sorted(after)))
    finally:
        runner.close()
        repo.git.checkout("--detach", corpus.base_sha)
        repo.close()
    return out


def evaluate(corpus: Corpus, truths: list[CaseTruth], *, rules=None, agent: str = "local",
             cache_dir: str | Path | None = None, progress=None) -> dict:
    """Run the selector on every case (base -> injected ref) and score it against the truth."""
    scores = []
    runner = SpyreRunner(corpus.path)  # stage 4 collects in forks of it
    try:
        for truth in truths:
            case = truth.case
            if progress:
                progress(f"select {case.injection.name}")
            selection = select(str(corpus.path), case.base_sha, case.sha, rules=rules, agent=agent,
                               cache_dir=cache_dir, pytest_runner=runner)
            seconds = {d.test_id: d.estimated_seconds or 1.0 for d in selection.decisions if d.selected}
            score = score_case(case.injection.name, case.injection.kind, case.injection.breaking,
                               truth.newly_failing, selection, truth.reached, seconds)
            scores.append((score, truth))
    finally:
        runner.close()
    breaking = [s for s, _ in scores if s.breaking]
    no_op = [s for s, _ in scores if not s.breaking]
    return {
        "corpus": str(corpus.path), "base_sha": corpus.base_sha, "agent": agent,
        "summary": {
            "breaking_changes": len(breaking), "changes_that_broke": sum(s.broke for s in breaking),
            "changes_caught": sum(s.caught for s in breaking if s.broke),
            "newly_failing": sum(s.newly_failing for s in breaking),
            "tests_caught": sum(s.caught_tests for s in breaking),
            "no_op_changes": len(no_op), "no_op_selected": sum(s.selected for s in no_op),
            "no_op_that_broke": sorted(s.name for s in no_op if s.broke),
            "breaking_that_did_not_break": sorted(s.name for s in breaking if not s.broke),
        },
        "kinds": by_kind([s for s, _ in scores]),
        "cases": [{**s.to_json(), "sha": t.case.sha, "files_run": t.files} for s, t in scores],
    }


def meets_bar(report: dict, apfdc_floor: float = 0.9) -> list[str]:
    """Where the selector falls short of issue 13's bar: every newly failing test selected, mean
    APFDc per kind >= the floor, nothing beyond the always-run rules for a no-op change. One line
    per shortfall (empty: met)."""
    out = []
    for case in report["cases"]:
        if case["breaking"] and case["missed"]:
            out.append(f"{case['name']}: {len(case['missed'])} of {case['newly_failing']} newly failing tests "
                       f"not selected (e.g. {case['missed'][0]})")
        elif not case["breaking"] and case["selected"]:
            out.append(f"{case['name']}: no-op change selected {case['selected']} tests beyond the always-run rules")
    for row in report["kinds"]:
        if row["apfdc"] is not None and row["apfdc"] < apfdc_floor:
            out.append(f"kind {row['kind']}: mean APFDc {row['apfdc']:.3f} < {apfdc_floor}")
    return out
