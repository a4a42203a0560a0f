"""Stage 4 on the real spyre device: collect through the testdefs test base, resolve, order, budget, shard."""
import json
import os
import signal
import sys
import threading
import time

import pytest

from selector.budget import Budget
from selector.history import History
from selector.model import Candidate, Evidence
from selector.stages.agent import AgentStage
from selector.stages.diff import add_candidate
from selector.stages.rules import RulesStage
from selector.stages.verify import VerifyStage
from testdefs import load_rules
from tests.selector.selector_helpers import context_for, make_upstream, report_for, write_rules
from tests.tiers import starts_processes

ALPHA = "test/test_alpha.py::TestAlphaPRIVATEUSE1::"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("upstream") / "repo")


@pytest.fixture(scope="session")
@starts_processes
def verify_stage():
    """Stage 4: it collects the selected tests on spyre in pytest processes."""
    return VerifyStage


@pytest.fixture(scope="module")
def verified(upstream, tmp_path_factory, verify_stage):
    tmp = tmp_path_factory.mktemp("verify")
    root, from_sha, to_sha = upstream
    rules_path = write_rules(tmp / "rules")
    history = History.from_records([
        {"id": ALPHA + "test_mul_spyre", "outcome": "passed", "duration": 8.0},
        {"id": ALPHA + "test_add_spyre_float32", "outcome": "passed", "duration": 5.0},
        {"id": "test/test_beta.py::TestBetaPRIVATEUSE1::test_scaling_spyre", "outcome": "passed", "duration": 4.0}])
    ctx = context_for(root, from_sha, to_sha, rules=load_rules([rules_path]),
                      history=history, torch_version="2.14", shards=2)
    ctx.report = report_for(root, from_sha, to_sha, tmp / "cache")
    # a file that cannot be imported at the to-ref: its tests are dropped with the import error
    (root / "test" / "test_broken.py").write_text("import module_that_does_not_exist_anywhere\n\n"
                                                  "def test_never():\n    pass\n")
    for name, file in (("test_gone", "test/test_alpha.py"), ("test_elsewhere", "test/test_missing.py"),
                       ("test_never", "test/test_broken.py")):
        add_candidate(ctx, Candidate(test_id=f"{file}::TestAlpha::{name}", file=file, class_name="TestAlpha",
                                     name=name, change="modified", reasons=[Evidence(file=file)]))
    for stage in (RulesStage(), AgentStage(), verify_stage()):
        stage.run(ctx)
    return ctx


def test_ids_are_real_instantiated_spyre_variants(verified):
    assert ALPHA + "test_add_spyre_float32" in verified.tests
    assert ALPHA + "test_mul_spyre" in verified.tests  # always-run
    assert "test/test_beta.py::TestBetaPRIVATEUSE1::test_scaling_spyre" in verified.tests  # agent addition
    assert all("::" in t and ("_spyre" in t) for t in verified.tests)


def test_excluded_dtype_variant_is_not_run(verified):
    assert ALPHA + "test_add_spyre_float64" not in verified.tests
    dropped = verified.decisions.get(ALPHA + "test_add_spyre_float64")
    assert not dropped.selected and dropped.stage == "verify" and dropped.rule.endswith("alpha.yaml:15")
    assert "no float64 on spyre" in dropped.reason


def test_missing_tests_are_dropped_with_a_reason(verified):
    gone = verified.decisions["test/test_alpha.py::TestAlpha::test_gone"]
    assert not gone.selected and gone.stage == "verify" and "no spyre variant was collected" in gone.reason
    elsewhere = verified.decisions["test/test_missing.py::TestAlpha::test_elsewhere"]
    assert "does not exist at the to-ref" in elsewhere.reason
    broken = verified.decisions["test/test_broken.py::TestAlpha::test_never"]
    assert not broken.selected and "collection of test/test_broken.py failed on spyre" in broken.reason
    assert "module_that_does_not_exist_anywhere" in broken.reason


def test_durations_order_and_shards(verified):
    decisions = {t: verified.decisions[t] for t in verified.tests}
    assert decisions[ALPHA + "test_mul_spyre"].estimated_seconds == 8.0
    scores = [decisions[t].score for t in verified.tests]
    assert scores == sorted(scores, reverse=True)  # riskiest first
    assert len(verified.shard_lists) == 2
    assert sorted(t for s in verified.shard_lists for t in s) == sorted(verified.tests)
    assert {decisions[t].shard for t in verified.tests} == {0, 1}
    assert verified.funnel["verified"] == len(verified.tests)


def test_funnel_counts_the_selection_in_both_units(verified):
    """The selected fraction compares like with like: spyre ids with the ids collected, test
    functions (the variants' parents) with the upstream functions."""
    from selector.stages.verify import schedule

    funnel = verified.funnel
    assert funnel["selected"] == len(verified.tests) < funnel["collected"]  # the files hold tests the change does not reach
    assert funnel["selected_functions"] == 3  # test_add, test_mul, test_scaling: one variant each here
    live = list(verified.tests)
    schedule(verified, "verify", live, {t: t.split("::")[0] for t in live})  # two files' variants
    assert verified.funnel["selected_functions"] == 2 and verified.funnel["selected"] == 3
    schedule(verified, "verify", live, {t: t for t in live})
    assert verified.funnel["selected_functions"] == 3


def test_budget_cut_after_verify_is_recorded(verified):
    from selector.stages.verify import schedule

    live = sorted(verified.tests)
    parents = {t: t for t in live}
    verified.must_run.clear()  # let the budget reach everything for this check
    verified.budget = Budget(seconds=10.0)
    schedule(verified, "verify", live, parents)
    cut = [d for d in verified.decisions.values() if d.rule == "budget"]
    assert cut and all("Dropped by the budget (10s of test time)" in d.reason for d in cut)
    assert sum(verified.decisions[t].estimated_seconds for t in verified.tests) <= 10.0


def test_cli_select_with_verify_writes_artifacts(upstream, tmp_path, run_process):
    root, _, _ = upstream
    rules = write_rules(tmp_path / "rules")
    done = run_process([sys.executable, "-m", "relay", "select", "--from", "2.13", "--to", "2.14",
                        "--upstream", str(root), "--rules", str(rules), "--shards", "2",
                        "--output", str(tmp_path / "out"), "--json"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    written = json.loads((tmp_path / "out" / "selection.json").read_text())
    assert printed["tests"] == written["tests"] and len(written["shards"]) == 2
    assert ALPHA + "test_add_spyre_float32" in written["tests"]
    funnel = json.loads((tmp_path / "out" / "funnel.json").read_text())
    assert funnel["verified"] == funnel["selected"] == len(written["tests"])
    explained = json.loads((tmp_path / "out" / "explanations.json").read_text())["tests"]
    assert {e["test_id"] for e in explained if e["selected"]} == set(written["tests"])


def test_a_conftest_pytest_cannot_load_costs_only_its_own_files(tmp_path):
    # upstream 2.0's test/distributed/pipeline/sync/conftest.py declares pytest_ignore_collect(path, ...),
    # which today's pytest refuses: once, that stopped the collection of every other file too
    from selector.stages.collect import collect

    test_dir = tmp_path / "test"
    (test_dir / "sync").mkdir(parents=True)
    (test_dir / "test_fine.py").write_text("def test_one():\n    pass\n")
    (test_dir / "sync" / "conftest.py").write_text("def pytest_ignore_collect(path, config):\n    return False\n")
    (test_dir / "sync" / "test_pipe.py").write_text("def test_two():\n    pass\n")
    collected = collect(tmp_path, ["test/test_fine.py", "test/sync/test_pipe.py"])
    assert collected.ids == ["test/test_fine.py::test_one"]
    # the file's error names the conftest (by its path in the tree, not on this machine) and the hook refused
    assert "PluginValidationError" in collected.errors["test/sync/test_pipe.py"]
    assert "Plugin 'test/sync/conftest.py' for hook 'pytest_ignore_collect'" in collected.errors["test/sync/test_pipe.py"]


def test_workers_side_by_side_collect_what_one_worker_collects(tmp_path):
    # each file is its own fork; two at a time give the same ids and errors as one at a time
    from selector.stages.collect import collect

    test_dir = tmp_path / "test"
    (test_dir / "sync").mkdir(parents=True)
    for n in range(5):
        (test_dir / f"test_f{n}.py").write_text("".join(f"def test_{n}_{i}():\n    pass\n" for i in range(n + 1)))
    (test_dir / "test_bad.py").write_text("import module_that_does_not_exist_anywhere\n")
    (test_dir / "sync" / "conftest.py").write_text("def pytest_ignore_collect(path, config):\n    return False\n")
    (test_dir / "sync" / "test_pipe.py").write_text("def test_two():\n    pass\n")
    files = sorted(f"test/{p.relative_to(test_dir)}" for p in test_dir.rglob("test_*.py"))
    one, two = collect(tmp_path, files, workers=1), collect(tmp_path, files, workers=2)
    assert len(one.ids) == 15 and two.ids == one.ids
    assert two.errors.keys() == one.errors.keys() == {"test/test_bad.py", "test/sync/test_pipe.py"}
    assert "module_that_does_not_exist_anywhere" in two.errors["test/test_bad.py"]


def test_what_a_file_collects_does_not_depend_on_the_other_files_collected(tmp_path):
    # upstream 2.0 in one shared session: a second file of the same basename was refused ("use a
    # unique basename"), a package of test/ was hidden by another file's import of a same-named
    # module, and a file left torch's default dtype at float64 for every file after it
    from selector.stages.collect import collect

    test_dir = tmp_path / "test"
    for sub in ("one", "two", "jit"):
        (test_dir / sub).mkdir(parents=True)
    for sub in ("one", "two"):
        (test_dir / sub / "test_same.py").write_text(f"def test_in_{sub}():\n    pass\n")
    (test_dir / "test_a_float64.py").write_text(
        "import torch\ntorch.set_default_dtype(torch.float64)\ndef test_sets():\n    pass\n")
    (test_dir / "test_b_dtype.py").write_text(
        "import pytest, torch\n"
        "@pytest.mark.parametrize('dtype', [str(torch.get_default_dtype())])\n"
        "def test_default(dtype):\n    pass\n")
    (test_dir / "test_c_shadow.py").write_text(  # a module named jit, not test/jit/, in sys.modules
        "import sys, types\nsys.modules['jit'] = types.ModuleType('jit')\ndef test_shadows():\n    pass\n")
    (test_dir / "jit" / "__init__.py").write_text("")
    (test_dir / "jit" / "helper.py").write_text("VALUE = 1\n")
    (test_dir / "test_d_jit.py").write_text("from jit.helper import VALUE\ndef test_uses_jit():\n    pass\n")
    files = sorted(f"test/{p.relative_to(test_dir)}" for p in test_dir.rglob("test_*.py"))
    together = collect(tmp_path, files)
    assert together.errors == {}
    assert together.ids == ["test/one/test_same.py::test_in_one", "test/test_a_float64.py::test_sets",
                            "test/test_b_dtype.py::test_default[torch.float32]",
                            "test/test_c_shadow.py::test_shadows", "test/test_d_jit.py::test_uses_jit",
                            "test/two/test_same.py::test_in_two"]


def test_a_variant_maps_to_the_longest_method_that_prefixes_it():
    from selector.stages.verify import longest_method

    names = {"test_foo", "test_foo_add", "test_bar"}
    assert longest_method("test_foo_add_spyre_float32", names) == "test_foo_add"
    assert longest_method("test_foo_mul_spyre", names) == "test_foo"
    assert longest_method("test_foo", names) == "test_foo"
    assert longest_method("test_foobar_spyre", names) == ""
    assert longest_method("test_baz", names) == ""


def test_collections_are_kept_per_file_for_the_same_tree_and_environment(upstream, tmp_path):
    # a second selection to the same to-ref collects nothing again; another tree collects again
    from selector.stages.collect import run_new_interpreter
    from selector.stages.collect_cache import collect_cached, open_collect_cache
    from selector.upstream.git_source import GitUpstream

    root, from_sha, to_sha = upstream
    source = GitUpstream(root, cache_dir=tmp_path / "cache")
    sessions = []

    def counting(args, cwd, env, timeout):
        sessions.append([a for a in args if a.endswith(".py") and not a.startswith("python_files")])
        return run_new_interpreter(args, cwd, env, timeout)

    files = ["test/test_alpha.py", "test/test_beta.py", "test/test_missing.py"]
    first = collect_cached(open_collect_cache(source, to_sha), source.checkout(to_sha), files, runner=counting)
    assert sessions == [["test_alpha.py"], ["test_beta.py"]]  # one session per file
    assert any(i.startswith("test/test_beta.py::") for i in first.ids)
    assert set(first.errors) == {"test/test_missing.py"}
    again = collect_cached(open_collect_cache(source, to_sha), source.checkout(to_sha), files, runner=counting)
    assert len(sessions) == 2 and (again.ids, again.errors) == (first.ids, first.errors)
    # the from-ref's test/ tree differs (test_alpha.py changed): both of its files are collected again,
    # as test_beta.py's collection may depend on any module of the tree
    older = collect_cached(open_collect_cache(source, from_sha), source.checkout(from_sha), files[:2], runner=counting)
    assert sessions[2:] == [["test_alpha.py"], ["test_beta.py"]] and older.ids != first.ids


def test_an_object_address_or_the_checkouts_path_in_a_collection_error_does_not_reach_the_artifacts(tmp_path):
    # upstream's own exception text can print an object (`<function expectedFailure at 0x7f...>`):
    # the same inputs must still give byte-identical artifacts
    from selector.stages.collect import collect

    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_addr.py").write_text("raise AssertionError(f'no OpInfo for {print}, {object()}')\n")
    # nor the checkout's place on this machine (upstream 2.0's lazy tests open a yaml file of aten/)
    (tmp_path / "test" / "test_path.py").write_text(
        "from pathlib import Path\nPath(__file__).parents[1].joinpath('aten', 'gone.yaml').read_text()\n")
    errors = collect(tmp_path, ["test/test_addr.py", "test/test_path.py"]).errors
    assert "AssertionError: no OpInfo for <built-in function print>, <object object at 0x?>" in errors["test/test_addr.py"]
    assert errors["test/test_path.py"].endswith("No such file or directory: 'aten/gone.yaml'")


def test_the_forked_collector_reports_the_error_lines_a_plain_pytest_reports(tmp_path):
    # the forks print no source line per traceback entry (selector/stages/collect_fork.py); the
    # exception lines the report keeps must be those of an ordinary pytest process
    from selector.stages.collect import collect, run_new_interpreter

    test_dir = tmp_path / "test"
    test_dir.mkdir()
    (test_dir / "helper_deep.py").write_text("def load():\n    import module_missing_everywhere\n\nload()\n")
    sources = {
        "test_through_helper.py": "import helper_deep\n\ndef test_a():\n    pass\n",
        "test_chained.py": "try:\n    {}['spyre']\nexcept KeyError as exc:\n"
                           "    raise RuntimeError('no device\\nsecond line') from exc\n",
        "test_syntax.py": "def test_broken(:\n    pass\n",
        "test_fine.py": "def test_fine():\n    pass\n",
    }
    for name, text in sources.items():
        (test_dir / name).write_text(text)
    files = [f"test/{name}" for name in sources]
    forked = collect(tmp_path, files)
    plain = collect(tmp_path, files, runner=run_new_interpreter)
    assert forked.ids == plain.ids == ["test/test_fine.py::test_fine"]
    assert forked.errors == plain.errors
    assert set(forked.errors) == {"test/test_through_helper.py", "test/test_chained.py", "test/test_syntax.py"}
    assert "No module named 'module_missing_everywhere'" in forked.errors["test/test_through_helper.py"]


def test_an_early_collector_collects_what_a_fresh_one_does_once_then_is_gone(tmp_path):
    from selector.stages.collect import EarlyCollector, collect

    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_one.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "test" / "test_two.py").write_text("import module_missing_everywhere\n")
    files = ["test/test_one.py", "test/test_two.py"]
    with EarlyCollector() as early:
        waiting = early._process
        ahead = collect(tmp_path, files, early=early)
        assert early.take() is None  # handed over once; a later collection starts its own
    assert waiting.returncode in (0, 1)  # it ran the request and ended (1: a file failed to collect), not killed
    fresh = collect(tmp_path, files)
    assert (ahead.ids, ahead.errors) == (fresh.ids, fresh.errors)
    assert ahead.ids == ["test/test_one.py::test_a", "test/test_one.py::test_b"]

    unused = EarlyCollector()
    process = unused._process
    unused.close()
    assert process.returncode is not None  # ended with close: nothing left running


def test_the_pipeline_starts_the_collector_after_stage_1_and_not_for_a_tree_collected_before(upstream, tmp_path):
    from selector import pipeline
    from selector.select import open_source
    from selector.stages.base import SelectContext

    root, _, _ = upstream
    contexts = []
    for _ in range(2):
        ctx = SelectContext(source=open_source(str(root), tmp_path / "cache"), from_ref="2.13", to_ref="2.14",
                            torch_version="2.14")
        selection = pipeline.run(ctx, ("diff", "verify"))
        contexts.append((ctx, selection))
    (first, chosen), (second, again) = contexts
    assert first.collector is not None and first.collector._process is None  # started, then taken or ended
    assert second.collector is None  # this environment collected the tree already: the cache answers
    assert chosen.tests == again.tests and chosen.tests


def test_a_tree_whose_own_conftest_fails_stops_the_collection_with_its_error(tmp_path):
    # the forked collector cannot prepare pytest's session then; each file's own pytest.main reports it
    from selector.stages.collect import CollectionFailed, collect

    test_dir = tmp_path / "test"
    test_dir.mkdir()
    (test_dir / "conftest.py").write_text("import module_missing_for_the_conftest\n")
    (test_dir / "test_one.py").write_text("def test_one():\n    pass\n")
    with pytest.raises(CollectionFailed, match="stopped without a report: .*module_missing_for_the_conftest"):
        collect(tmp_path, ["test/test_one.py"])


def test_a_collector_killed_midway_fails_the_collection_instead_of_reporting_its_files_as_errors(tmp_path):
    # a file the killed collector never reached has no report; read as "stopped before collecting",
    # it would have been kept in the collection cache as that file's error
    from selector.stages.collect import CollectionFailed, EarlyCollector, collect

    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_slow.py").write_text("import time\ntime.sleep(60)\n\ndef test_a():\n    pass\n")
    with EarlyCollector() as early:
        process = early._process
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(
            result=_raised(lambda: collect(tmp_path, ["test/test_slow.py"], early=early))))
        worker.start()
        deadline = time.monotonic() + 60
        while early._process is not None and time.monotonic() < deadline:  # until collect() has taken it
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        worker.join(60)
    assert isinstance(outcome["result"], CollectionFailed) and "killed (signal 9)" in str(outcome["result"])


def _raised(call):
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the test reads what it was
        return exc
