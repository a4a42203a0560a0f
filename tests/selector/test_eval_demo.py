"""relay-cli eval on the demo upstream, on the real spyre device: every real regression is caught."""
import json
import os
import sys

from relay.storage import EvalRun, session_scope


def test_eval_on_demo_catches_every_regression(tmp_path, run_process):
    from relay.demo.generate import init_demo

    upstream = tmp_path / "upstream"
    manifest = init_demo(upstream)
    env = {**os.environ, "RELAY_DATA_DIR": str(tmp_path / "data")}
    env.pop("RELAY_DATABASE_URL", None)
    done = run_process([sys.executable, "-m", "relay", "eval", "--from", "2.13", "--to", "2.14",
                        "--upstream", str(upstream), "--rules", "testdefs/rules/demo",
                        "--output", str(tmp_path / "out"), "--json"],
                       capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == json.loads((tmp_path / "out" / "eval.json").read_text())
    ours, everything = report["strategies"][0], report["strategies"][1]
    assert report["regressions"] == len(manifest["expected_regressions"]) and report["missed"] == []
    assert ours["test_recall"] == 1.0 and ours["cause_recall"] == 1.0
    assert ours["fraction_by_duration"] <= 0.30
    assert ours["apfdc"] >= 0.9
    assert everything["tests"] == report["full_suite"]["tests"] > ours["tests"]
    by_name = {row["name"]: row for row in report["strategies"]}
    assert ours["test_recall"] >= by_name["random, same count"]["test_recall"]
    assert ours["test_recall"] >= by_name["TD-style top 25% of files"]["test_recall"]
    # The regression in a test file the change does not touch: "run the edited files" misses it.
    assert ours["test_recall"] > by_name["changed test files"]["test_recall"]
    with session_scope(f"sqlite:///{tmp_path / 'data' / 'relay.db'}") as session:  # for the dashboard's trends
        [stored] = session.query(EvalRun).all()
        assert (stored.test_recall, stored.apfdc, stored.regressions) == (1.0, ours["apfdc"], 3)
