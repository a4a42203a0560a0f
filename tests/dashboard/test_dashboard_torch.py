"""A version-true run on the dashboard: which torch each side ran on, and a device broken on one."""
from __future__ import annotations

import pytest

from dashboard import create_app
from relay.config import Settings
from relay.reporting.run_facts import load_run_facts, markdown_summary, title
from relay.storage import Run, TestResult, init_db, session_scope

LINES = ["generator.cpp:1:2: error: #error injected", "ninja: build stopped: subcommand failed."]
TORCH = {
    "from": {"ref": "2.13", "torch_version": "2.13.0+cpu", "env": None, "run_id": "fromrun",
             "build": {"kind": "installed", "version": "2.13.0+cpu", "requirement": "",
                       "why": "--torch-from 2.13.0 (the installed torch is 2.13.0)"},
             "device": {"status": "ok", "torch_version": "2.13.0+cpu", "lines": []},
             "summary": "from 2.13: installed torch; --torch-from 2.13.0 (the installed torch is 2.13.0)"},
    "to": {"ref": "2.14", "torch_version": "2.14.1+cu130", "env": "/cache/envs/torch-2.14.1-py311",
           "build": {"kind": "version", "version": "2.14.1", "requirement": "torch==2.14.1", "why": "--torch-to 2.14.1"},
           "device": {"status": "does_not_build", "torch_version": "2.14.1+cu130", "lines": LINES},
           "summary": "to 2.14: torch 2.14.1+cu130 (version); --torch-to 2.14.1; spyre does not build on torch 2.14.1+cu130"},
}
VERDICT = "spyre does not build on torch 2.14.1+cu130"


@pytest.fixture
def broken_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    init_db(url)
    with session_scope(url) as session:
        run = Run(status="failed", from_ref="2.13", to_ref="2.14", upstream="demo", torch=TORCH,
                  summary={"torch": {side: TORCH[side]["summary"] for side in TORCH},
                           "device_broken": [{"side": "to", "torch_version": "2.14.1+cu130",
                                              "status": "does_not_build", "verdict": VERDICT, "lines": LINES}]})
        session.add(run)
        session.flush()
        test_id = "spyre-device/torch-2.14.1+cu130::does_not_build"
        session.add(TestResult(run_id=run.id, test_id=test_id, normalised_id=test_id, file="spyre-device",
                               outcome="error", message=VERDICT, traceback="\n".join(LINES), verdict="device_broken"))
        return url, run.id


def test_run_header_and_api_show_each_sides_torch_and_the_broken_device(broken_run):
    url, run_id = broken_run
    client = create_app(Settings(database_url=url, api_token=None)).test_client()
    html = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "to side (2.14): torch <code>2.14.1+cu130</code>" in html and "--torch-to 2.14.1" in html
    assert "from side (2.13): torch <code>2.13.0+cpu</code>" in html and 'href="/runs/fromrun"' in html
    assert f"<strong>{VERDICT}</strong>" in html and "error: #error injected" in html
    torch = client.get(f"/api/runs/{run_id}").get_json()["torch"]
    assert torch["to"]["verdict"] == VERDICT and torch["to"]["lines"] == LINES
    assert (torch["from"]["device"], torch["from"]["verdict"], torch["from"]["kind"]) == ("ok", None, "installed")


def test_reports_title_the_run_by_the_device_verdict_and_list_the_torches(broken_run):
    url, run_id = broken_run
    facts = load_run_facts(url, run_id)
    assert title(facts) == VERDICT
    text = markdown_summary(facts, None)
    assert "`to 2.14: torch 2.14.1+cu130 (version)" in text
    assert f"**to side: {VERDICT}**" in text and "    generator.cpp:1:2: error: #error injected" in text
