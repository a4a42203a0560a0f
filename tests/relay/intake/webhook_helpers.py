"""Shared helpers for the webhook tests: servers in threads, signing, fixtures, stand-ins.

The GitHub stand-in speaks the REST endpoints PyGithub calls for check runs; the CRCR
stand-in records callbacks. Both can be told to fail the next requests with given statuses.
"""
from __future__ import annotations

import copy
import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "github-webhooks"
SECRET = "test-secret-not-for-production"
UPSTREAM = "pytorch/pytorch"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def as_upstream(payload: dict, repo: str = UPSTREAM) -> dict:
    """The fixture with its repository renamed, so a relay watching ``repo`` acts on it."""
    payload = copy.deepcopy(payload)
    payload["repository"]["full_name"] = repo
    return payload


def signature(secret: str, body: bytes) -> str:
    # Computed here independently of relay.intake.signature.
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def upstream_pr(name: str, base: str = "main") -> dict:
    """A pull_request fixture as the watched upstream sends it, against a watched branch."""
    payload = as_upstream(fixture(name))
    payload["pull_request"]["base"]["ref"] = base
    return payload


_delivery_counter = itertools.count(1)


def post_event(base_url: str, event: str, payload: dict | bytes, *, secret: str = SECRET,
               delivery: str | None = None, headers: dict | None = None) -> requests.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    sent = {"Content-Type": "application/json", "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or f"delivery-{next(_delivery_counter)}-{time.monotonic_ns()}",
            "X-Hub-Signature-256": signature(secret, body)}
    sent.update(headers or {})
    return requests.post(f"{base_url}/webhook/github", data=body, headers=sent, timeout=30)


class ServerThread:
    """A WSGI app served by werkzeug's threaded server on a free loopback port."""

    def __init__(self, app) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


class RecordingExecutor:
    """The executor seam: records what the receiver hands over instead of running it."""

    def __init__(self) -> None:
        self.submitted: list[str] = []
        self._lock = threading.Lock()

    def submit(self, event_id: str) -> None:
        with self._lock:
            self.submitted.append(event_id)


class _Failing:
    """Answers the next requests with queued failure statuses before behaving normally."""

    def __init__(self) -> None:
        self.failures: list[tuple[int, dict]] = []
        self.lock = threading.Lock()

    def fail_next(self, status: int, times: int = 1, headers: dict | None = None) -> None:
        with self.lock:
            self.failures += [(status, headers or {})] * times

    def __enter__(self):
        self.server.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)

    def pop_failure(self):
        with self.lock:
            return self.failures.pop(0) if self.failures else None


class CrcrStandIn(_Failing):
    """Receives CRCR callbacks at POST /callback and keeps the bodies."""

    def __init__(self) -> None:
        super().__init__()
        self.callbacks: list[dict] = []
        self.authorizations: list[str | None] = []  # the Authorization header of every attempt
        self.attempts = 0
        app = Flask("crcr-stand-in")

        @app.post("/callback")
        def callback():
            with self.lock:
                self.attempts += 1
                self.authorizations.append(request.headers.get("Authorization"))
            failure = self.pop_failure()
            if failure:
                return jsonify(error="injected"), failure[0], failure[1]
            with self.lock:
                self.callbacks.append(request.get_json())
            return jsonify(status="ok")

        self.server = ServerThread(app)
        self.url = f"{self.server.url}/callback"


class GitHubStandIn(_Failing):
    """The check-run, pull and commit endpoints of GitHub's REST API, enough for PyGithub."""

    def __init__(self) -> None:
        super().__init__()
        self.check_runs: dict[int, dict] = {}
        self.pulls: dict[int, dict] = {}  # number -> {merged, merge_commit_sha, state, base}
        self.commits: dict[str, list[str]] = {}  # sha -> parent shas
        self.branches: dict[str, str] = {}  # name -> head sha
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Authorization
        ids = itertools.count(1001)
        app = Flask("github-stand-in")

        def base() -> str:
            return self.server.url

        @app.before_request
        def record_and_fail():
            with self.lock:
                self.requests.append((request.method, request.path, request.headers.get("Authorization")))
            failure = self.pop_failure()
            if failure:
                return jsonify(message="injected failure"), failure[0], failure[1]
            return None

        @app.get("/repos/<owner>/<name>")
        def repository(owner, name):
            return jsonify(id=1, name=name, full_name=f"{owner}/{name}", url=f"{base()}/repos/{owner}/{name}",
                           owner={"login": owner})

        @app.post("/repos/<owner>/<name>/check-runs")
        def create_check_run(owner, name):
            data = request.get_json()
            for required in ("name", "head_sha"):
                if not data.get(required):
                    return jsonify(message=f"{required} is required"), 422
            check_id = next(ids)
            run = {"id": check_id, "url": f"{base()}/repos/{owner}/{name}/check-runs/{check_id}",
                   "repository": f"{owner}/{name}", "status": data.get("status", "queued"),
                   "conclusion": data.get("conclusion"), "name": data["name"], "head_sha": data["head_sha"],
                   "details_url": data.get("details_url"), "external_id": data.get("external_id"),
                   "output": data.get("output") or {}}
            with self.lock:
                self.check_runs[check_id] = run
            return jsonify(run), 201

        @app.get("/repos/<owner>/<name>/check-runs/<int:check_id>")
        def get_check_run(owner, name, check_id):
            run = self.check_runs.get(check_id)
            return (jsonify(run), 200) if run else (jsonify(message="Not Found"), 404)

        @app.patch("/repos/<owner>/<name>/check-runs/<int:check_id>")
        def update_check_run(owner, name, check_id):
            run = self.check_runs.get(check_id)
            if run is None:
                return jsonify(message="Not Found"), 404
            with self.lock:
                run.update({k: v for k, v in request.get_json().items() if v is not None})
            return jsonify(run)

        @app.get("/repos/<owner>/<name>/pulls/<int:number>")
        def get_pull(owner, name, number):
            pull = self.pulls.get(number)
            if pull is None:
                return jsonify(message="Not Found"), 404
            return jsonify(number=number, state=pull.get("state", "closed"), merged=pull["merged"],
                           merge_commit_sha=pull.get("merge_commit_sha"),
                           base={"ref": pull.get("base", "main"), "sha": "b" * 40},
                           url=f"{base()}/repos/{owner}/{name}/pulls/{number}")

        @app.get("/repos/<owner>/<name>/commits/<sha>")
        def get_commit(owner, name, sha):
            if sha not in self.commits:
                return jsonify(message="No commit found for SHA"), 422
            return jsonify(sha=sha, url=f"{base()}/repos/{owner}/{name}/commits/{sha}",
                           parents=[{"sha": p, "url": f"{base()}/repos/{owner}/{name}/commits/{p}"}
                                    for p in self.commits[sha]])

        @app.get("/repos/<owner>/<name>/branches/<path:branch>")
        def get_branch(owner, name, branch):
            if branch not in self.branches:
                return jsonify(message="Branch not found"), 404
            return jsonify(name=branch, commit={"sha": self.branches[branch],
                                                "url": f"{base()}/repos/{owner}/{name}/commits/x"})

        self.server = ServerThread(app)
        self.url = self.server.url


def wait_for(condition: Callable[[], object], timeout: float = 60.0, interval: float = 0.05):
    """Poll until ``condition()`` is truthy (a bound on waiting, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def stored_run(settings, *, status: str = "failed", results=(), from_ref: str = "a" * 40,
               to_ref: str = "b" * 40) -> str:
    """A finished run written straight to the real database, as the runner would leave it.

    ``results`` are (test id, outcome, verdict, message) tuples.
    """
    import datetime as dt

    from relay.storage import Run, TestResult, init_db, session_scope

    init_db(settings.resolved_database_url)
    now = dt.datetime.now(dt.timezone.utc)
    with session_scope(settings.resolved_database_url) as session:
        run = Run(status=status, trigger="webhook", from_ref=from_ref, to_ref=to_ref, considered=40,
                  selected=len(results), started_at=now, finished_at=now)
        session.add(run)
        session.flush()
        for test_id, outcome, verdict, message in results:
            session.add(TestResult(run_id=run.id, test_id=test_id, normalised_id=test_id,
                                   file=test_id.split("::")[0], outcome=outcome, verdict=verdict, message=message,
                                   traceback=f"Traceback for {test_id}" if outcome == "failed" else None))
        return run.id


MIXED_RESULTS = [
    ("test/test_ops.py::TestCommonPRIVATEUSE1::test_add_spyre_float16", "passed", "ok", None),
    ("test/test_ops.py::TestCommonPRIVATEUSE1::test_mul_spyre_float16", "failed", "new_failure", "mismatch"),
    ("test/test_ops.py::TestCommonPRIVATEUSE1::test_div_spyre_float16", "failed", "known_failure", "known"),
    ("test/test_nn.py::TestNNPRIVATEUSE1::test_conv_spyre", "skipped", None, "no conv"),
]


def report_context(**overrides):
    from relay.reporting.reports import ReportContext

    values = dict(event_type="pull_request", delivery_id="upstream-delivery-7",
                  payload={"action": "synchronize", "number": 7}, repository=UPSTREAM, head_sha="c" * 40,
                  check_name="spyre/upstream", want_check_run=True)
    values.update(overrides)
    return ReportContext(**values)


def fast_report_options():
    """Short backoff and no PyGithub write pacing: the retry logic is the same, the waits are not."""
    from relay.reporting.reports import ReportOptions

    return ReportOptions(crcr_attempts=3, crcr_backoff=0.01, github_retries=1, github_throttle=False)
