"""relay-cli select / eval: user mistakes are one line on stderr and exit 2."""
import sys

import pytest

from tests.selector.selector_helpers import make_upstream


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    root, _, _ = make_upstream(tmp_path_factory.mktemp("upstream") / "repo")
    return root


@pytest.fixture
def relay_cli(run_process):
    """relay-cli in a subprocess, as a user runs it."""
    def run(*args, cwd=None, env=None):
        return run_process([sys.executable, "-m", "relay", *args], capture_output=True, text=True, timeout=300,
                           cwd=cwd, env=env)
    return run


def one_line_error(done) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("relay-cli: error:"), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("flag,value,expected", [("--budget", "lots", "budget 'lots' is not a percentage"),
                                                  ("--budget", "0%", "is not a percentage"),
                                                  ("--time", "soonish", "time budget 'soonish' is not a duration")])
def test_bad_budget_is_one_line_exit_2(upstream, tmp_path, flag, value, expected, relay_cli):
    done = relay_cli("select", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), flag, value, cwd=tmp_path)
    assert expected in one_line_error(done)


def test_bad_ref_is_one_line_exit_2(upstream, tmp_path, relay_cli):
    done = relay_cli("select", "--from", "2.13", "--to", "9.99", "--upstream", str(upstream), "--stage", "diff",
                     cwd=tmp_path)
    assert "9.99" in one_line_error(done)


def test_missing_upstream_is_one_line_exit_2(tmp_path, relay_cli):
    done = relay_cli("select", "--from", "2.13", "--to", "2.14", cwd=tmp_path,
                     env={k: v for k, v in __import__("os").environ.items() if k != "RELAY_UPSTREAM"})
    assert "no upstream given" in one_line_error(done)


def test_bad_shards_is_one_line_exit_2(upstream, tmp_path, relay_cli):
    done = relay_cli("select", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), "--shards", "0",
                     cwd=tmp_path)
    assert "shards must be a positive integer" in one_line_error(done)


def test_bad_rules_path_is_one_line_exit_2(upstream, tmp_path, relay_cli):
    done = relay_cli("select", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream),
                     "--rules", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert "nope.yaml" in one_line_error(done)


def test_eval_without_truth_is_one_line_exit_2(upstream, tmp_path, relay_cli):
    done = relay_cli("eval", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), cwd=tmp_path)
    assert "no ground truth" in one_line_error(done)


def test_stage_diff_lists_every_changed_test_with_its_reason(upstream, tmp_path, relay_cli):
    done = relay_cli("select", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), "--stage", "diff",
                     "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = __import__("json").loads(done.stdout)
    reasons = {e["test_id"]: e["reason"] for e in document["explanations"]}
    assert set(document["tests"]) == set(reasons) == {"test/test_alpha.py::TestAlpha::test_add",
                                                      "test/test_alpha.py::TestAlpha::test_sub"}
    assert "test body or decorators changed" in reasons["test/test_alpha.py::TestAlpha::test_add"]
    assert "test added" in reasons["test/test_alpha.py::TestAlpha::test_sub"]
    table = relay_cli("select", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), "--stage", "diff",
                      cwd=tmp_path)
    assert table.returncode == 0 and "2 of 2 selected" in table.stdout
    total = document["funnel"]["upstream_total"]
    assert total == 7 and f"selected 2 of {total} upstream test functions (28.6%)" in table.stdout


def test_artifacts_are_byte_identical_across_processes(upstream, tmp_path, relay_cli):
    import os

    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        done = relay_cli("select", "--from", "2.13", "--to", "2.14", "--upstream", str(upstream), "--stage", "agent",
                         "--shards", "2", "--output", str(out), cwd=tmp_path, env=dict(os.environ, PYTHONHASHSEED=seed))
        assert done.returncode == 0, done.stderr
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outputs[0] == outputs[1] and len(outputs[0]) == 3
