"""The JSON API over a seeded relay database: content, filters, pagination, errors and the token."""
from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from dashboard import create_app
from dashboard.api import openapi_document
from relay.config import Settings
from relay.storage import Explanation, TestResult, session_scope
from testdefs.ids import normalise
from tests.dashboard.dashboard_fixtures import app, client, seeded  # noqa: F401
from tests.dashboard.dashboard_seed import FLAKY_TEST, HOSTILE_TITLE, NEW_FAILURE_TEST, XFAIL_TEST, running_run


def test_runs_are_listed_newest_first_with_counts_and_pages(client, seeded) -> None:
    body = client.get("/api/runs?per_page=2").get_json()
    assert body["total"] == len(seeded.run_ids) + 1
    assert (body["page"], body["pages"], body["has_next"], body["has_prev"]) == (1, 4, True, False)
    assert [r["id"] for r in body["items"]] == [seeded.queued_run_id, seeded.latest_run_id]
    latest = body["items"][1]
    assert latest["total"] == 40 and latest["new_failures"] == 1
    assert latest["counts"]["timed_out"] == 1 and latest["counts"]["xfailed"] == 1
    assert latest["event"]["title"] == HOSTILE_TITLE
    last_page = client.get("/api/runs?per_page=2&page=4").get_json()
    assert [r["id"] for r in last_page["items"]] == [seeded.run_ids[0]] and not last_page["has_next"]


def test_runs_filter_by_status_ref_and_trigger(client, seeded) -> None:
    failed = client.get("/api/runs?status=failed").get_json()["items"]
    assert failed and {r["status"] for r in failed} == {"failed"}
    prs = client.get("/api/runs?ref=pr/1201").get_json()["items"]
    assert prs and all(r["to_ref"] == "pr/1201" for r in prs)
    crcr = client.get("/api/runs?trigger=crcr").get_json()["items"]
    assert [r["id"] for r in crcr] == [seeded.queued_run_id]
    assert client.get("/api/runs?status=passed,failed&trigger=crcr").get_json()["total"] == 0


def test_worst_first_orders_by_pass_rate(client) -> None:
    items = client.get("/api/runs?sort=worst&per_page=200").get_json()["items"]
    rates = [r["pass_rate"] for r in items if r["pass_rate"] is not None]
    assert rates == sorted(rates) and rates[0] < rates[-1]


@pytest.mark.parametrize(("query", "parameter"), [
    ("/api/runs?per_page=0", "per_page"), ("/api/runs?page=abc", "page"), ("/api/runs?status=exploded", "status"),
    ("/api/runs?sort=random", "sort"), ("/api/runs?per_page=201", "per_page"),
])
def test_bad_list_parameters_are_400_naming_the_parameter(client, query, parameter) -> None:
    response = client.get(query)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["parameter"] == parameter and parameter in error["message"]


def test_unknown_run_is_a_json_404(client) -> None:
    for path in ("/api/runs/deadbeef", "/api/runs/deadbeef/results", "/api/runs/deadbeef/explanations",
                 "/api/runs/deadbeef/files"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.get_json()["error"]["message"] == "no run with id 'deadbeef'"
    assert client.get("/api/no-such-endpoint").get_json()["error"]["status"] == 404


def test_run_detail_says_what_changed_and_how_selection_narrowed(client, seeded) -> None:
    run = client.get(f"/api/runs/{seeded.latest_run_id}").get_json()
    assert run["status"] == "failed" and run["from_ref"] == "main" and run["to_ref"] == "pr/1201"
    stages = [(s["stage"], s["count"]) for s in run["funnel"]["stages"]]
    assert stages == [("upstream_total", 90), ("changed", 60), ("applicable", 54), ("triaged", 46),
                      ("verified", 40), ("selected", 40)]
    assert run["funnel"]["dropped"] == {"diff": 0, "rules": 7, "agent": 7, "verify": 6}
    files = {f["file"]: f for f in run["changed_files"]}
    assert files["torch/testing/_internal/common_methods_invocations.py"]["hunks"] == ["@@ -1200,6 +1200,9 @@"]
    assert sum(f["tests"] for f in run["changed_files"]) == 40
    assert run["artifacts"] == ["selection.json", "testdefs-patch.yaml"]
    assert run["queue_seconds"] == 25.0 and run["duration_seconds"] == 700.0


def test_results_put_new_failures_first_and_carry_their_reason(client, seeded) -> None:
    body = client.get(f"/api/runs/{seeded.latest_run_id}/results?per_page=3").get_json()
    first = body["items"][0]
    assert first["test_id"] == NEW_FAILURE_TEST and first["verdict"] == "new_failure"
    assert "Tensor-likes are not close" in first["traceback"]
    assert first["selection"]["selected"] and first["selection"]["evidence"][0]["op"] == "matmul"
    assert {r["outcome"] for r in body["items"][1:]} <= {"failed", "timed_out"}
    assert body["total"] == 40
    # a failure carries its short history: passed in every earlier run, failed now
    assert [p["outcome"] for p in first["recent"]] == ["passed"] * 5 + ["failed"]
    assert first["recent"][-1]["run_id"] == seeded.latest_run_id
    passing = client.get(f"/api/runs/{seeded.latest_run_id}/results?outcome=passed&per_page=1").get_json()
    assert passing["items"][0]["recent"] is None


def test_results_filters(client, seeded) -> None:
    base = f"/api/runs/{seeded.run_ids[2]}/results"
    assert [r["test_id"] for r in client.get(f"{base}?outcome=xfailed").get_json()["items"]] == [XFAIL_TEST]
    flaky = client.get(f"{base}?flaky=true").get_json()["items"]
    assert [(r["test_id"], r["outcome"], r["attempts"]) for r in flaky] == [(FLAKY_TEST, "passed", 2)]
    assert client.get(f"{base}?new_failures=1").get_json()["total"] == 0
    in_file = client.get(f"{base}?file=test/test_nn.py&per_page=200").get_json()["items"]
    assert in_file and {r["file"] for r in in_file} == {"test/test_nn.py"}
    assert client.get(f"{base}?q=test_matmul").get_json()["items"][0]["test_id"] == NEW_FAILURE_TEST
    response = client.get(f"{base}?outcome=exploded")
    assert response.status_code == 400 and response.get_json()["error"]["parameter"] == "outcome"
    assert client.get(f"{base}?flaky=maybe").get_json()["error"]["parameter"] == "flaky"


def test_files_summarise_outcomes_worst_first(client, seeded) -> None:
    files = client.get(f"/api/runs/{seeded.latest_run_id}/files").get_json()["items"]
    assert files[0]["file"] == "test/test_nn.py" and files[0]["failing"] == 2
    assert sum(f["total"] for f in files) == 40


def test_explanations_list_selected_in_order_then_dropped_with_reasons(client, seeded) -> None:
    base = f"/api/runs/{seeded.latest_run_id}/explanations"
    everything = client.get(f"{base}?per_page=200").get_json()
    assert everything["total"] == 60
    positions = [e["position"] for e in everything["items"] if e["selected"]]
    assert positions == list(range(40))
    dropped = client.get(f"{base}?selected=false&stage=rules").get_json()
    assert dropped["total"] == 7
    assert {e["reason"] for e in dropped["items"]} == {"skipped by rule: sparse tensors are unsupported on spyre"}
    assert dropped["items"][0]["rule"] == "testdefs/rules/demo/test_sparse.yaml:4"
    assert client.get(f"{base}?stage=bogus").get_json()["error"]["parameter"] == "stage"


def test_history_of_a_flaky_test(client, seeded) -> None:
    body = client.get("/api/tests/history", query_string={"id": FLAKY_TEST}).get_json()
    assert body["normalised_id"] == "test/test_nn.py::TestNNDeviceType::test_conv2d"
    assert (body["results"], body["runs"], body["flaky_results"]) == (6, 6, 2)
    assert [p["run_id"] for p in body["timeline"]] == seeded.run_ids
    assert [p["outcome"] for p in body["timeline"]] == ["passed", "failed", "passed", "failed", "passed", "failed"]
    assert body["flips"] == 5 and body["flakiness"] == round(5 / 6, 4)
    assert body["items"][0]["run"]["id"] == seeded.latest_run_id  # newest first
    by_normalised = client.get("/api/tests/history", query_string={"id": body["normalised_id"]}).get_json()
    assert by_normalised["results"] == 6


def test_history_of_a_steady_test_and_of_nothing(client) -> None:
    steady = client.get("/api/tests/history", query_string={"id": XFAIL_TEST}).get_json()
    assert steady["flakiness"] == 0.0 and steady["outcomes"] == {"xfailed": 6}
    missing = client.get("/api/tests/history", query_string={"id": "test/test_x.py::TestX::test_none"})
    assert missing.status_code == 404
    assert client.get("/api/tests/history").get_json()["error"]["parameter"] == "id"


def test_health_reports_queue_reports_and_windows(client, seeded) -> None:
    body = client.get("/api/health").get_json()
    assert body["database"] == {"reachable": True, "dialect": "sqlite"}
    assert body["runs"]["active"] == {"queued": 1, "selecting": 0, "running": 0}
    assert body["runs"]["last_finished"]["id"] == seeded.latest_run_id
    assert body["reports"]["counts"] == {"pending": 0, "sent": 6, "failed": 1}
    assert body["reports"]["attention"][0]["last_error"] == "HTTP 502 from api.github.com"
    assert body["last_event"]["title"] == HOSTILE_TITLE
    windows = {w["window"]: w for w in body["windows"]}
    assert windows["24h"]["runs"] == 7 and windows["24h"]["timeouts"] == 1 and windows["24h"]["results"] == 240


def test_unreachable_database_is_503_not_a_traceback() -> None:
    down = create_app(Settings(database_url="postgresql+psycopg://nobody@127.0.0.1:1/none")).test_client()
    health = down.get("/api/health")
    assert health.status_code == 503 and health.get_json()["database"]["reachable"] is False
    runs = down.get("/api/runs")
    assert runs.status_code == 503 and "RELAY_DATABASE_URL" in runs.get_json()["error"]["message"]
    page = down.get("/health")
    assert page.status_code == 503 and b"unreachable" in page.data


def test_bearer_token_guards_the_api_but_not_its_spec(seeded) -> None:
    guarded = create_app(Settings(database_url=seeded.url, api_token="s3cret")).test_client()
    missing = guarded.get("/api/runs")
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert "bearer token" in missing.get_json()["error"]["message"]
    assert guarded.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/api/runs", headers={"Authorization": "Basic s3cret"}).status_code == 401
    assert guarded.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert guarded.get("/api/openapi.json").status_code == 200


def test_openapi_document_is_valid_and_covers_every_api_route(app) -> None:
    document = openapi_document()
    validate(document)
    routes = {rule.rule.removeprefix("/api").replace("<", "{").replace(">", "}")
              for rule in app.url_map.iter_rules() if rule.endpoint.startswith(("api.", "actions."))}
    assert routes == set(document["paths"])


def test_a_run_in_progress_is_followed_live(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = running_run(url, [TestResult(test_id=XFAIL_TEST, normalised_id=normalise(XFAIL_TEST),
                                          file="test/test_torch.py", outcome="xfailed")])
    client = create_app(Settings(database_url=url)).test_client()
    assert client.get(f"/api/runs/{run_id}").get_json()["counts"] == {"xfailed": 1}
    with session_scope(url) as session:
        session.add(TestResult(run_id=run_id, test_id=NEW_FAILURE_TEST, normalised_id=normalise(NEW_FAILURE_TEST),
                               file="test/test_ops.py", outcome="failed", verdict="new_failure"))
    running = client.get(f"/api/runs/{run_id}").get_json()
    assert running["counts"] == {"xfailed": 1, "failed": 1} and running["new_failures"] == 1
    files = client.get(f"/api/runs/{run_id}/files").get_json()["items"]
    assert [f["file"] for f in files] == ["test/test_ops.py", "test/test_torch.py"]


def test_matrix_puts_files_that_fail_most_often_first(client, seeded) -> None:
    body = client.get("/api/matrix?runs=3").get_json()
    assert [r["id"] for r in body["runs"]] == seeded.run_ids[-3:]  # oldest left
    first = body["files"][0]
    assert first["file"] == "test/test_nn.py" and first["failing_runs"] == 2  # conv2d failed in runs 3 and 5
    latest_cell = first["cells"][-1]
    assert latest_cell["run_id"] == seeded.latest_run_id and latest_cell["worst"] == "timed_out"
    assert latest_cell["failing"] == 2
    assert client.get("/api/matrix?ref=pr/1201").get_json()["runs"][-1]["id"] == seeded.latest_run_id
    assert client.get("/api/matrix?runs=51").get_json()["error"]["parameter"] == "runs"


def test_trends_count_per_day(client, seeded) -> None:
    body = client.get("/api/trends?days=30").get_json()
    assert sum(p["runs"] for p in body["points"]) == len(seeded.run_ids) + 1
    assert sum(p["results"] for p in body["points"]) == seeded.results
    assert sum(p["considered"] for p in body["points"]) == 60 * len(seeded.run_ids)
    assert all(p["selected_fraction"] == round(40 / 60, 4) for p in body["points"] if p["considered"])
    assert client.get("/api/trends?days=0").get_json()["error"]["parameter"] == "days"


def test_a_run_without_a_stored_funnel_gets_one_from_its_explanations(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = running_run(url, [Explanation(test_id=f"test/t.py::T::test_{k}", selected=k < 3,
                                           stage=("verify", "rules", "agent")[k % 3] if k >= 3 else "verify",
                                           reason="because") for k in range(9)])
    funnel = create_app(Settings(database_url=url)).test_client().get(f"/api/runs/{run_id}").get_json()["funnel"]
    assert [(s["stage"], s["count"]) for s in funnel["stages"]] == [
        ("considered", 9), ("diff", 9), ("rules", 7), ("agent", 5), ("verify", 3)]
    assert funnel["selected"] == 3


def test_run_sums_simulated_device_stats_over_its_results(client, seeded) -> None:
    with session_scope(seeded.url) as session:
        stats = [r.sim_stats for r in session.query(TestResult).filter_by(run_id=seeded.latest_run_id)]
    totals = client.get(f"/api/runs/{seeded.latest_run_id}").get_json()["sim_totals"]
    assert totals["op_count"] == sum(s["op_count"] for s in stats) > 0
    assert totals["fallback_ops"] == sum(s["fallback_ops"] for s in stats)
    assert totals["sim_seconds"] == round(sum(s["sim_seconds"] for s in stats), 6)


def test_search_text_is_literal_not_a_wildcard(client, seeded) -> None:
    base = f"/api/runs/{seeded.latest_run_id}/results"
    assert client.get(f"{base}?q=test_op1_").get_json()["total"] > 0
    assert client.get(f"{base}?q=test%25op1").get_json()["total"] == 0  # '%' typed by the reader
    assert client.get("/api/runs?ref=pr_1201").get_json()["total"] == 0  # '_' is not "any character"
