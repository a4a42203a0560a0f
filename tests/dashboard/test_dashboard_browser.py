"""The dashboard in real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

One walk through the main path: runs list -> a run -> filter -> a test's history; screenshots
of each page are kept in the test's tmp directory.
"""
from __future__ import annotations

import shutil

import pytest

from tests.dashboard.dashboard_fixtures import app, live_server, seeded  # noqa: F401
from tests.dashboard.dashboard_seed import FLAKY_TEST, HOSTILE_TITLE, NEW_FAILURE_TEST

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: install the 'chromium' package (scripts/ensure-system-deps.sh)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_reader_goes_from_runs_to_a_failure_and_its_history(page, live_server, seeded, tmp_path) -> None:
    alerts: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))

    page.goto(f"{live_server}/")
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == len(seeded.run_ids) + 1
    assert rows.first.locator(".chip").first.inner_text() == "queued"
    page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)

    # The upstream PR title is shown as text, never run as markup.
    latest = page.locator(f'tr[data-run-id="{seeded.latest_run_id}"]')
    assert latest.locator(".title").inner_text().strip() == f"#1201 {HOSTILE_TITLE}"
    latest.locator("a.run-link").click()
    page.wait_for_url(f"**/runs/{seeded.latest_run_id}")
    assert page.locator(".change-title").inner_text().strip() == f"#1201 {HOSTILE_TITLE}"
    assert alerts == []
    assert page.locator("svg.funnel rect").count() == 6
    assert page.locator("summary code.test-id").first.inner_text() == NEW_FAILURE_TEST
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)

    # Ticking "new failures only" submits the filter form by itself (the page's one script).
    page.get_by_label("new failures only").check()
    page.wait_for_url("**new_failures=1**")
    assert page.locator("summary code.test-id").all_inner_texts() == [NEW_FAILURE_TEST]

    # Open the failure: its selection reason and traceback are there.
    page.locator("summary").first.click()
    detail = page.locator(".detail").first
    assert "Selected at" in detail.locator(".reason").inner_text()
    assert "Tensor-likes are not close" in detail.locator("pre.traceback").inner_text()

    # Filter by outcome with the select: the flaky conv2d test fails in this run.
    page.select_option("select[name=outcome]", "failed")
    page.wait_for_url("**outcome=failed**")
    page.get_by_label("new failures only").uncheck()
    page.wait_for_function("() => !location.search.includes('new_failures')")
    failed = page.locator("summary code.test-id").all_inner_texts()
    assert failed == [NEW_FAILURE_TEST, FLAKY_TEST]

    page.locator("summary").nth(1).click()
    page.locator(".detail a.history-link").nth(1).click()
    page.wait_for_url("**/tests?id=**")
    assert page.locator("code.normalised").inner_text() == "test/test_nn.py::TestNNDeviceType::test_conv2d"
    assert page.locator("svg.timeline rect").count() == len(seeded.run_ids)
    assert page.locator("svg.timeline rect.flaky").count() == 2
    assert page.locator(".flakiness").inner_text().strip() == "83.3%"
    page.screenshot(path=str(tmp_path / "test-history.png"), full_page=True)


def test_phone_sized_screen_shows_the_runs_list(page, live_server, seeded, tmp_path) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server}/health")
    assert page.locator("#database .chip").inner_text() == "reachable"
    page.goto(f"{live_server}/")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the runs page is {overflow}px wider than a phone screen"
    page.screenshot(path=str(tmp_path / "runs-phone.png"), full_page=True)


def test_matrix_cell_opens_the_run_filtered_to_its_file(page, live_server, seeded, tmp_path) -> None:
    page.goto(f"{live_server}/matrix")
    assert page.locator("table.matrix tbody tr").first.locator("td").first.inner_text() == "test/test_nn.py"
    page.screenshot(path=str(tmp_path / "matrix.png"), full_page=True)
    red = page.locator("table.matrix tbody tr").first.locator("td.cell.bad a").last
    assert red.inner_text() == "2"
    red.click()
    page.wait_for_url(f"**/runs/{seeded.latest_run_id}?file=test/test_nn.py")
    shown = page.locator("summary code.test-id").all_inner_texts()
    assert len(shown) == 10 and all(t.startswith("test/test_nn.py::") for t in shown)
    page.get_by_role("link", name="Trends").click()
    page.wait_for_url("**/trends")
    assert page.locator("svg.rate circle").count() >= 2
    page.screenshot(path=str(tmp_path / "trends.png"), full_page=True)
