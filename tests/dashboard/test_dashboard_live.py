"""A running run's page follows its progress without reloading; cancel and re-run need the token."""
from __future__ import annotations

import shutil
import threading

import pytest
from werkzeug.serving import make_server

from dashboard import create_app
from relay.config import Settings
from relay.storage import Run, session_scope
from tests.dashboard.dashboard_seed import running_run

TOKEN = "s3cret-token-for-tests"


def progress(url: str, run_id: str, **snapshot) -> None:
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        run.summary = {**(run.summary or {}), "progress": snapshot}


@pytest.fixture
def served(tmp_path):
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = running_run(url, [])
    progress(url, run_id, stage="run", message="passed    test/test_a.py::test_one", done=3, total=49, elapsed=12.5)
    server = make_server("127.0.0.1", 0, create_app(Settings(database_url=url, api_token=TOKEN)), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield url, run_id, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)


def test_running_run_shows_its_progress_and_the_actions(served) -> None:
    url, run_id, _ = served
    client = create_app(Settings(database_url=url, api_token=TOKEN)).test_client()
    html = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert 'id="live"' in html and "3/49 tests" in html and ">run<" in html
    assert "Cancel run</button>" in html and "Re-run</button>" in html
    polled = client.get(f"/runs/{run_id}/progress").get_json()  # what the page polls: no token needed
    assert polled["active"] and polled["progress"]["done"] == 3 and polled["status"] == "running"
    api = client.get(f"/api/runs/{run_id}", headers={"Authorization": f"Bearer {TOKEN}"}).get_json()
    assert api["active"] and api["progress"]["stage"] == "run"
    without_token = create_app(Settings(database_url=url)).test_client().get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Cancel run" not in without_token  # no token configured: no write buttons


@pytest.mark.browser
def test_progress_updates_in_place_and_cancel_works(served, tmp_path) -> None:
    if not shutil.which("/usr/bin/chromium"):
        pytest.fail("/usr/bin/chromium not found: install the 'chromium' package (scripts/ensure-system-deps.sh)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    url, run_id, base = served
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.set_default_timeout(20_000)
        page.goto(f"{base}/runs/{run_id}")
        page.evaluate("() => { window.sameDocument = true; }")
        progress(url, run_id, stage="run", message="failed    test/test_b.py::test_two", done=17, total=49, elapsed=40.0)
        page.wait_for_function("() => document.querySelector('#live .live-count').textContent === '17/49 tests'")
        assert page.evaluate("() => window.sameDocument === true")  # updated in place, not reloaded
        assert page.locator("#live .live-elapsed").inner_text() == "40.0s"
        page.screenshot(path=str(tmp_path / "run-live-phone.png"), full_page=True)

        page.fill("form.run-actions input[name=token]", "wrong")
        page.click("text=Cancel run")
        page.wait_for_function("() => document.querySelector('.action-result').textContent !== ''")
        page.fill("form.run-actions input[name=token]", TOKEN)
        page.click("text=Cancel run")
        page.wait_for_function("() => !document.getElementById('live')")  # reloaded: the run is over
        browser.close()
    with session_scope(url) as session:
        assert session.get(Run, run_id).status == "cancelled"
