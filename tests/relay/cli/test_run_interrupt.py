"""Ctrl-C on `relay-cli run`: the run stops at once, is marked cancelled, keeps what ran."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.relay.upstream_helpers import make_upstream

BEFORE = {"test/test_work.py": '''
    def test_quick():
        pass
'''}
# The to-ref changes both tests, so both are selected; with two shards they run side by side, and
# each tells the test where it is through a marker file.
AFTER = {"test/test_work.py": '''
    import os
    import time
    from pathlib import Path

    def test_quick():
        Path(os.environ["MARKERS"], "quick-done").write_text("done")

    def test_stuck():
        Path(os.environ["MARKERS"], "stuck-started").write_text("started")
        time.sleep(600)
'''}


def stored_results(database) -> int:
    """Results stored so far (test_quick's shard stores when it ends), read without locking the run."""
    if not database.exists():
        return 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as connection:
        try:
            return connection.execute("select count(*) from test_results").fetchone()[0]
        except sqlite3.OperationalError:  # the schema is not there yet
            return 0


def test_ctrl_c_cancels_the_run_and_keeps_what_ran(tmp_path, start_process):
    upstream = make_upstream(tmp_path / "upstream", BEFORE, AFTER)
    database = tmp_path / "data" / "relay.db"
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env.update(RELAY_DATA_DIR=str(tmp_path / "data"), MARKERS=str(markers), RELAY_RERUNS="0")
    process = start_process([sys.executable, "-m", "relay", "run", "--from", "2.13", "--to", "2.14",
                             "--upstream", str(upstream), "--shards", "2", "--json"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not ((markers / "stuck-started").exists() and stored_results(database) == 1):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"the tests never got there: {sorted(os.listdir(markers))}"
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        # The stuck test sleeps 600 s: an exit at all means the interrupt stopped it.
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "cancelled: interrupted (Ctrl-C); kept 1 test result" in stderr and "Traceback" not in stderr
    from relay.storage import Run, TestResult, session_scope

    with session_scope(f"sqlite:///{tmp_path / 'data' / 'relay.db'}") as session:
        (run,) = session.query(Run).all()
        results = {r.test_id: r.outcome for r in session.query(TestResult).all()}
        assert (run.status, run.error) == ("cancelled", "interrupted by the user (Ctrl-C)")
        assert run.finished_at is not None
        output_dir = run.output_dir
    assert results == {"test/test_work.py::test_quick": "passed"}  # the stopped test is not made up
    lines = (Path(output_dir) / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["test/test_work.py::test_quick"]
    assert stdout == ""  # --json prints the outcome only for a run that finished
