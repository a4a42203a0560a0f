"""Eval replays recorded by relay-cli eval show on the trends page and in its API."""
from __future__ import annotations

import json
from pathlib import Path

from dashboard import create_app
from relay.config import Settings
from relay.storage import init_db
from relay.storage.evals import store_eval

# The shape of eval.json (selector/eval): the selector's row first, then the baselines.
REPORT = {
    "from_ref": "2.13", "to_ref": "2.14", "regressions": 3, "fixed": 1, "missed": [],
    "full_suite": {"tests": 1994, "seconds": 1994.0}, "selector_seconds": 10.9,
    "strategies": [
        {"name": "selector (local)", "tests": 49, "fraction_by_count": 0.0246, "fraction_by_duration": 0.0246,
         "test_recall": 1.0, "cause_recall": 1.0, "fixed_recall": 1.0, "apfdc": 0.9286},
        {"name": "changed test files", "tests": 32, "fraction_by_count": 0.016, "fraction_by_duration": 0.016,
         "test_recall": 0.6667, "cause_recall": 0.6667, "fixed_recall": 1.0, "apfdc": None},
    ],
}


def test_trends_list_eval_replays_with_the_selectors_row(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    first = store_eval(url, REPORT, upstream="/src/pytorch", agent="local")
    worse = json.loads(json.dumps(REPORT))
    worse["strategies"][0].update(test_recall=0.6667, apfdc=0.5)
    store_eval(url, worse, upstream="/src/pytorch", agent="embedding")
    client = create_app(Settings(database_url=url)).test_client()

    evals = client.get("/api/trends").get_json()["evals"]
    assert [(e["agent"], e["test_recall"], e["apfdc"]) for e in evals] == [("local", 1.0, 0.9286),
                                                                           ("embedding", 0.6667, 0.5)]
    assert evals[0]["id"] == first and evals[0]["fraction_by_duration"] == 0.0246 and evals[0]["regressions"] == 3

    html = client.get("/trends").get_data(as_text=True)
    assert "test recall per eval replay" in html  # the chart
    assert html.count('<tr class="eval">') == 2 and "2.13 → 2.14" in html and "0.929" in html


def test_trends_without_evals_say_how_to_record_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    init_db(url)
    client = create_app(Settings(database_url=url)).test_client()
    assert client.get("/api/trends").get_json()["evals"] == []
    assert "relay-cli eval</code> records one" in client.get("/trends").get_data(as_text=True)


def test_an_unreachable_database_costs_only_the_stored_copy() -> None:
    from rich.console import Console

    from relay.cli.eval_cmd import _store

    console = Console(record=True, width=200)
    _store(Settings(database_url="postgresql+psycopg://nobody@127.0.0.1:1/none"), REPORT, "local", console)
    assert "not stored for the dashboard: cannot open database" in console.export_text()
