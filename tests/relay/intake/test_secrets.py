"""Secrets planted in every configured place never come out: not in logs, the database, pages or the API."""
from __future__ import annotations

import sqlite3
import subprocess

import pytest
import requests

from dashboard import create_app as dashboard_app
from relay.config import Settings, load_settings
from relay.redaction import redact, redact_url
from relay.reporting.crcr_callback import CrcrClient
from relay.storage import Report, Run, init_db, session_scope
from tests.relay.intake.test_webhook_serve import RELAY_CLI, free_port, relay_env
from tests.relay.intake.webhook_helpers import SECRET, CrcrStandIn, post_event, upstream_pr, wait_for

CALLBACK_PASSWORD = "cb-password-5f1e9a"
CALLBACK_QUERY_TOKEN = "cb-query-token-77d2c4"
CALLBACK_TOKEN = "cb-bearer-token-0b6a31"
UPSTREAM_PASSWORD = "upstream-password-3c8e02"
API_TOKEN = "api-token-a41f7e"
GITHUB_TOKEN = "ghp_planted0123456789"
PLANTED = (CALLBACK_PASSWORD, CALLBACK_QUERY_TOKEN, CALLBACK_TOKEN, UPSTREAM_PASSWORD, API_TOKEN, GITHUB_TOKEN,
           SECRET)


def assert_clean(where: str, text: str) -> None:
    leaked = [secret for secret in PLANTED if secret in text]
    assert not leaked, f"{where} shows {leaked}"


def test_redaction_masks_userinfo_query_values_and_registered_values():
    Settings(crcr_callback_url=f"https://relay:{CALLBACK_PASSWORD}@hud.example/cb?token={CALLBACK_QUERY_TOKEN}")
    assert redact_url(f"https://relay:{CALLBACK_PASSWORD}@hud.example/cb?token={CALLBACK_QUERY_TOKEN}&x=1") == \
        "https://***@hud.example/cb?token=***&x=***"
    # Known values are masked wherever they are quoted, e.g. a requests error that shows only the path.
    quoted = f"Max retries exceeded with url: /cb?token={CALLBACK_QUERY_TOKEN} (password {CALLBACK_PASSWORD})"
    assert_clean("redact()", redact(quoted))
    # Unknown credentials in a URL are masked by their form.
    assert redact("git clone https://bob:hunter22@git.example/x.git failed") == \
        "git clone https://***@git.example/x.git failed"
    assert redact("GET /hook?access_token=abc123def&page=2") == "GET /hook?access_token=***&page=2"
    assert "relay" in repr(Settings(crcr_callback_url="https://relay:pw-123456@h/x")) and \
        "pw-123456" not in repr(Settings(crcr_callback_url="https://relay:pw-123456@h/x"))


def test_callbacks_carry_the_token_from_a_file_as_a_bearer_header(tmp_path):
    token_file = tmp_path / "crcr-token"
    token_file.write_text(CALLBACK_TOKEN + "\n")
    settings = load_settings(environ={"RELAY_CRCR_CALLBACK_TOKEN_FILE": str(token_file)})
    assert settings.crcr_callback_token == CALLBACK_TOKEN
    with CrcrStandIn() as crcr:
        CrcrClient(crcr.url, token=settings.crcr_callback_token, attempts=1).send({"hello": "crcr"})
    assert crcr.authorizations == [f"Bearer {CALLBACK_TOKEN}"]
    assert crcr.callbacks == [{"hello": "crcr"}]


@pytest.mark.integration
def test_planted_secrets_never_reach_logs_database_pages_or_api(tmp_path, start_process):
    dead = free_port()  # nothing listens: every callback and the clone fail, with the URL in the error
    callback_url = f"http://relay:{CALLBACK_PASSWORD}@127.0.0.1:{dead}/callback?token={CALLBACK_QUERY_TOKEN}"
    upstream = f"http://mirror:{UPSTREAM_PASSWORD}@127.0.0.1:{dead}/pytorch.git"
    port = free_port()
    env = relay_env(tmp_path, RELAY_WEBHOOK_SECRET=SECRET, RELAY_CRCR_CALLBACK_URL=callback_url,
                    RELAY_CRCR_CALLBACK_TOKEN=CALLBACK_TOKEN, RELAY_UPSTREAM=upstream, RELAY_API_TOKEN=API_TOKEN,
                    RELAY_GITHUB_TOKEN=GITHUB_TOKEN, RELAY_GITHUB_API_URL=f"http://127.0.0.1:{dead}")
    process = start_process([str(RELAY_CLI), "serve", "--port", str(port), "--sweep-interval", "0"], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    db_path = tmp_path / "data" / "relay.db"
    try:
        def up():
            assert process.poll() is None
            try:
                return requests.get(f"{url}/healthz", timeout=1).ok
            except requests.ConnectionError:
                return False
        wait_for(up, timeout=60)
        answer = post_event(url, "pull_request", upstream_pr("pull_request.opened"))
        assert answer.status_code == 202, answer.text

        def finished_and_reported():
            with sqlite3.connect(db_path) as db:
                status = db.execute("select status from runs").fetchone()
                reports = db.execute("select count(*) from reports where last_error is not null").fetchone()[0]
            return status and status[0] == "error" and reports >= 2
        wait_for(finished_and_reported, timeout=120, interval=0.2)
    finally:
        process.terminate()
        logs, _ = process.communicate(timeout=30)

    assert "127.0.0.1" in logs and "report" in logs  # the failures were logged, with the secrets masked
    assert_clean("relay log", logs)
    with sqlite3.connect(db_path) as db:
        dump = "\n".join(db.iterdump())
    assert "***@127.0.0.1" in dump  # the errors kept their meaning
    assert_clean("database", dump)

    settings = Settings(data_dir=tmp_path / "data", api_token=API_TOKEN)
    init_db(settings.resolved_database_url)
    with session_scope(settings.resolved_database_url) as session:
        run_id = session.query(Run.id).scalar()
        assert session.query(Report).count() >= 2
    client = dashboard_app(settings).test_client()
    assert client.get("/health").status_code == 401  # configuration and errors need the token
    assert client.get("/api/health").status_code == 401
    hidden = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "sign in" in hidden and "clone" not in hidden
    assert client.post("/login", data={"token": "wrong", "next": "/health"}).status_code == 401
    signed_in = client.post("/login", data={"token": API_TOKEN, "next": "/health"})
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == "/health"
    pages = {path: client.get(path) for path in ("/health", f"/runs/{run_id}", "/", f"/runs/{run_id}/selection")}
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    api = {path: client.get(path, headers=auth) for path in ("/api/health", f"/api/runs/{run_id}", "/api/runs")}
    assert all(r.status_code == 200 for r in {**pages, **api}.values()), {p: r.status_code for p, r in
                                                                           {**pages, **api}.items()}
    assert "***@127.0.0.1" in pages["/health"].get_data(as_text=True)  # report errors shown, masked
    for path, response in {**pages, **api}.items():
        assert_clean(path, response.get_data(as_text=True))
