"""Write actions over real HTTP: cancel and re-run need the token, and a re-run really runs."""
from __future__ import annotations

import textwrap
import threading
import time

import git
import pytest
import requests
from werkzeug.serving import make_server

from dashboard import create_app
from relay.config import Settings
from relay.runs.pipeline import create_run
from relay.storage import Run, init_db, session_scope
from tests.tiers import starts_processes

TOKEN = "write-s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def tiny_upstream(root):
    """Tags v2.13.0 and v2.14.0 of one plain test file; 2.14 breaks test_mul."""
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Upstream").set_value("user", "email", "upstream@example.invalid")
    (root / "test").mkdir()
    for tag, body in (("v2.13.0", "assert 2 * 3 == 6"), ("v2.14.0", "assert 2 * 3 == 7")):
        (root / "test" / "test_math.py").write_text(textwrap.dedent(f"""
            def test_add():
                assert sum([1, 1]) == 2

            def test_mul():
                {body}
        """))
        repo.index.add(["test/test_math.py"])
        repo.index.commit(f"release {tag}")
        repo.create_tag(tag)
    return root


@pytest.fixture
def served(tmp_path):
    """(base URL, settings) of a dashboard with a write token, behind a real server on a free port."""
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN)
    init_db(settings.resolved_database_url)
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", settings
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture
@starts_processes
def served_executing(served):
    """``served``, for a test whose re-run really executes: its tests run in pytest processes."""
    return served


def queued_run(settings, tmp_path) -> str:
    return create_run(settings, upstream=str(tiny_upstream(tmp_path / "upstream")), from_ref="2.13", to_ref="2.14")


def status_of(settings, run_id) -> str:
    with session_scope(settings.resolved_database_url) as session:
        return session.get(Run, run_id).status


def test_cancel_needs_the_token_and_only_cancels_unfinished_runs(served, tmp_path):
    base, settings = served
    run_id = queued_run(settings, tmp_path)
    assert requests.post(f"{base}/api/runs/{run_id}/cancel", timeout=5).status_code == 401
    wrong = requests.post(f"{base}/api/runs/{run_id}/cancel", headers={"Authorization": "Bearer nope"}, timeout=5)
    assert wrong.status_code == 401 and status_of(settings, run_id) == "queued"
    done = requests.post(f"{base}/api/runs/{run_id}/cancel", headers=AUTH, timeout=5)
    assert done.status_code == 200 and done.json() == {"id": run_id, "status": "cancelled", "was": "queued"}
    assert status_of(settings, run_id) == "cancelled"
    again = requests.post(f"{base}/api/runs/{run_id}/cancel", headers=AUTH, timeout=5)
    assert again.status_code == 409 and "is cancelled" in again.json()["error"]["message"]
    unknown = requests.post(f"{base}/api/runs/deadbeef/cancel", headers=AUTH, timeout=5)
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "no run with id 'deadbeef'"


def test_write_actions_are_off_without_a_configured_token(tmp_path):
    client = create_app(Settings(data_dir=tmp_path, api_token=None)).test_client()
    refused = client.post("/api/runs/abc/rerun")
    assert refused.status_code == 403 and "RELAY_API_TOKEN" in refused.get_json()["error"]["message"]


def test_rerun_creates_a_new_run_and_executes_it_in_the_background(served_executing, tmp_path):
    base, settings = served_executing
    original = queued_run(settings, tmp_path)
    answer = requests.post(f"{base}/api/runs/{original}/rerun", headers=AUTH, timeout=5)
    assert answer.status_code == 202
    body = answer.json()
    assert body["rerun_of"] == original and body["id"] != original and body["url"] == f"/api/runs/{body['id']}"
    deadline = time.monotonic() + 180
    while status_of(settings, body["id"]) in ("queued", "selecting", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
    run = requests.get(f"{base}{body['url']}", headers=AUTH, timeout=5).json()
    assert (run["status"], run["trigger"], run["new_failures"]) == ("failed", "dashboard", 1)
    assert status_of(settings, original) == "queued"  # the original is left as it was


def test_rerun_of_a_run_whose_rules_are_gone_is_a_409_naming_them(served, tmp_path):
    base, settings = served
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\n")
    run_id = create_run(settings, upstream=str(tiny_upstream(tmp_path / "upstream")), from_ref="2.13",
                        to_ref="2.14", rules=rules)
    rules.unlink()
    answer = requests.post(f"{base}/api/runs/{run_id}/rerun", headers=AUTH, timeout=5)
    assert answer.status_code == 409
    assert answer.json()["error"]["message"].startswith(f"cannot re-run {run_id}: rules path {rules} does not exist")
