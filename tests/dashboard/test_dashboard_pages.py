"""The server-rendered pages: what a reader sees, escaping, filters, downloads and errors."""
from __future__ import annotations

import re

from dashboard import charts
from tests.dashboard.dashboard_fixtures import app, client, seeded  # noqa: F401
from tests.dashboard.dashboard_seed import FLAKY_TEST, NEW_FAILURE_TEST, XFAIL_TEST


def result_rows(html: str) -> list[str]:
    return re.findall(r'<summary><code class="test-id">([^<]+)</code>', html)


def test_runs_page_lists_runs_with_chips_chart_and_windows(client, seeded) -> None:
    html = client.get("/").get_data(as_text=True)
    for run_id in [seeded.queued_run_id, *seeded.run_ids]:
        assert f'href="/runs/{run_id}"' in html
    assert 'aria-label="pass rate per run"' in html and html.count("<circle") == len(seeded.run_ids)
    assert html.count('class="card window"') == 3
    assert 'class="chip status-queued"' in html
    assert "<link" in html and "//" not in html.split('rel="stylesheet" href="')[1][:5]  # served locally


def test_runs_page_filters_and_paginates(client, seeded) -> None:
    html = client.get("/?status=passed").get_data(as_text=True)
    assert html.count('class="run-link"') == 3 and 'class="chip status-failed"' not in html
    paged = client.get("/?per_page=3&page=2").get_data(as_text=True)
    assert "page 2 of 3" in paged and 'rel="prev"' in paged and 'rel="next"' in paged


def test_run_page_escapes_upstream_text(client, seeded) -> None:
    html = client.get(f"/runs/{seeded.latest_run_id}").get_data(as_text=True)
    assert "<script>alert" not in html
    assert "Fix &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; in matmul &amp; friends" in html


def test_run_page_shows_change_funnel_files_and_new_failures_first(client, seeded) -> None:
    html = client.get(f"/runs/{seeded.latest_run_id}").get_data(as_text=True)
    assert "torch/testing/_internal/common_methods_invocations.py" in html
    bars = re.findall(r'<rect x="110" y="\d+" width="(\d+)"', html)
    widths = [int(w) for w in bars]
    # considered, then left after diff (drops none), rules, agent, verify: one unit, a funnel that narrows
    assert len(widths) == 5 and widths[0] == widths[1] > widths[2] > widths[3] > widths[4]
    band = html[html.index('id="summary"'):html.index('id="results"')]
    assert html.index('id="summary"') < html.index("Selection funnel")  # failures come first
    assert NEW_FAILURE_TEST in band and "Tensor-likes are not close" in band
    assert f'href="/tests?id={NEW_FAILURE_TEST}">history</a>' in band
    assert "7 and why</a>" in html and "/selection?stage=rules&amp;selected=false" in html
    rows = result_rows(html)
    assert rows[0] == NEW_FAILURE_TEST and len(rows) == 40
    assert 'class="result verdict-new_failure"' in html
    assert "Tensor-likes are not close" in html
    assert "<dt>host_transfers.device_to_host.bytes</dt><dd>256</dd>" in html
    assert "<dt>adapted_ops</dt>" not in html and "host_to_device.count" not in html  # zero counters hidden
    assert 'id="device"' in html
    assert html.count('<p class="recent">') == 3  # the new failure, the flaky failure, the timeout
    assert f'class="history-link" href="/tests?id={NEW_FAILURE_TEST}"' in html


def test_run_page_result_filters(client, seeded) -> None:
    base = f"/runs/{seeded.run_ids[2]}"
    assert result_rows(client.get(f"{base}?outcome=xfailed").get_data(as_text=True)) == [XFAIL_TEST]
    assert result_rows(client.get(f"{base}?flaky=1").get_data(as_text=True)) == [FLAKY_TEST]
    only_new = client.get(f"/runs/{seeded.latest_run_id}?new_failures=1").get_data(as_text=True)
    assert result_rows(only_new) == [NEW_FAILURE_TEST]
    by_file = client.get(f"{base}?file=test/test_torch.py").get_data(as_text=True)
    assert result_rows(by_file) and all(t.startswith("test/test_torch.py::") for t in result_rows(by_file))
    assert "No results match these filters." in client.get(f"{base}?q=nothing-like-this").get_data(as_text=True)


def test_selection_page_explains_dropped_tests(client, seeded) -> None:
    html = client.get(f"/runs/{seeded.latest_run_id}/selection?selected=false").get_data(as_text=True)
    assert html.count('<tr class="dropped">') == 20 and '<tr class="selected">' not in html
    assert "agent: the change cannot reach sparse kernels" in html
    assert "rule testdefs/rules/demo/test_sparse.yaml:4" in html


def test_test_page_shows_timeline_and_flakiness(client, seeded) -> None:
    html = client.get("/tests", query_string={"id": FLAKY_TEST}).get_data(as_text=True)
    assert "test/test_nn.py::TestNNDeviceType::test_conv2d" in html
    cells = re.findall(r'<rect class="(\w+)( flaky)?"', html)
    assert [c[0] for c in cells] == ["good", "bad", "good", "bad", "good", "bad"]
    assert [bool(c[1]) for c in cells] == [False, False, True, False, True, False]
    assert "83.3%" in html  # flakiness: five flips in six runs


def test_health_page(client, seeded) -> None:
    html = client.get("/health").get_data(as_text=True)
    assert "reachable" in html and "HTTP 502 from api.github.com" in html
    assert f'href="/runs/{seeded.queued_run_id}"' in html


def test_artifacts_download_only_known_names(client, seeded) -> None:
    response = client.get(f"/runs/{seeded.latest_run_id}/artifacts/testdefs-patch.yaml")
    assert response.status_code == 200 and "attachment" in response.headers["Content-Disposition"]
    assert b"action: xfail" in response.data
    assert client.get(f"/runs/{seeded.latest_run_id}/artifacts/junit.xml").status_code == 404  # not written
    assert client.get(f"/runs/{seeded.latest_run_id}/artifacts/..%2Frelay.db").status_code == 404
    assert client.get(f"/runs/{seeded.run_ids[0]}/artifacts/selection.json").status_code == 404  # no output dir


def test_page_errors_are_html_naming_the_problem(client) -> None:
    bad = client.get("/?per_page=nope")
    assert bad.status_code == 400 and "per_page" in bad.get_data(as_text=True)
    assert bad.mimetype == "text/html"
    missing = client.get("/runs/nothing-here")
    assert missing.status_code == 404 and "no run with id" in missing.get_data(as_text=True)


def test_rate_chip_thresholds() -> None:
    assert [charts.rate_class(r) for r in (1.0, 0.95, 0.9499, 0.80, 0.7999, None)] == \
        ["good", "good", "warn", "warn", "bad", "muted"]


def test_funnel_bars_are_proportional() -> None:
    chart = charts.funnel_chart([{"stage": "considered", "count": 100}, {"stage": "verify", "count": 25},
                                 {"stage": "agent", "count": 0}])
    full, quarter, empty = (bar["width"] for bar in chart["bars"])
    assert quarter == round(full / 4) and empty == 0


def test_matrix_page_colours_cells_by_outcome(client, seeded) -> None:
    html = client.get("/matrix").get_data(as_text=True)
    cells = re.findall(r'<td class="cell (\w+)" data-worst="(\w+)">', html)
    assert len(cells) == 4 * len(seeded.run_ids)
    assert all(css == "bad" for css, worst in cells if worst in ("failed", "timed_out"))
    assert all(css == "good" for css, worst in cells if worst in ("passed", "skipped", "xfailed"))
    assert f'href="/runs/{seeded.latest_run_id}?file=test/test_nn.py"' in html


def test_trends_page_draws_both_charts(client) -> None:
    days = client.get("/api/trends").get_json()["points"]
    html = client.get("/trends").get_data(as_text=True)
    assert 'aria-label="pass rate per day"' in html and 'aria-label="selected share per day"' in html
    # A day marks each chart only where it has a value: shortly after midnight UTC the seed's queued
    # run (no results, nothing considered) is a day of its own with neither.
    marks = sum(d["pass_rate"] is not None for d in days) + sum(d["selected_fraction"] is not None for d in days)
    assert marks >= 2 and html.count("<circle") == marks and html.count('<tr class="day">') == len(days)
    assert "(66.7%)" in html  # 40 of 60 considered tests selected in every seeded run
