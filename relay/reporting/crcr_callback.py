"""The CRCR callback: body schema (as CRCR's callback action sends it) and an HTTP client.

The body echoes ``event_type``, ``delivery_id`` and ``payload`` of the dispatch and carries a
``workflow`` object; CRCR's caps are applied here (<= 1000 failed tests, message <= 1 KB,
stacktrace <= 4 KB, verdict summary <= 1 KB) so a large run never produces a body CRCR rejects.
"""
from __future__ import annotations

from typing import Literal

import requests
from pydantic import BaseModel, ConfigDict, Field, field_validator
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

from relay.redaction import redact, redact_url

SCHEMA_VERSION = 1
MAX_FAILED_TESTS = 1000
MAX_MESSAGE = 1024
MAX_STACKTRACE = 4096
MAX_VERDICT_SUMMARY = 1024
RETRY_STATUSES = (429, 500, 502, 503, 504)


class TestCounts(BaseModel):
    __test__ = False  # not a pytest class
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0


class FailedTest(BaseModel):
    name: str
    message: str = ""
    stacktrace: str = ""
    new_failure: bool = False

    @field_validator("message")
    @classmethod
    def _cap_message(cls, value: str) -> str:
        return value[:MAX_MESSAGE]

    @field_validator("stacktrace")
    @classmethod
    def _cap_stacktrace(cls, value: str) -> str:
        return value[-MAX_STACKTRACE:]  # the end of a traceback says the most


class TriageVerdict(BaseModel):
    category: Literal["upstream", "backend", "infra", "flake", "unknown"]
    confidence: Literal["high", "medium", "low"]
    summary: str = Field(max_length=MAX_VERDICT_SUMMARY)


class Workflow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    status: Literal["in_progress", "completed"]
    conclusion: Literal["success", "failure", "cancelled", "timed_out", "neutral"] | None = None
    name: str
    url: str | None = None
    run_id: str
    run_attempt: int = 1
    job_name: str
    check_run_id: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    artifact_url: str | None = None
    test_results: TestCounts | None = None
    failed_tests_detail: list[FailedTest] | None = None
    triage_verdict: TriageVerdict | None = None

    @field_validator("failed_tests_detail")
    @classmethod
    def _cap_failed(cls, value: list[FailedTest] | None) -> list[FailedTest] | None:
        return None if value is None else value[:MAX_FAILED_TESTS]


class Callback(BaseModel):
    event_type: str
    delivery_id: str
    payload: dict
    workflow: Workflow


class CallbackRejected(Exception):
    """CRCR answered 4xx (other than 429): resending the same body cannot help."""


class CallbackFailed(Exception):
    """Network error or 5xx/429 after every retry: worth trying again later."""


def retrying_session(attempts: int = 4, backoff: float = 1.0) -> requests.Session:
    """A session that retries POSTs on 429/5xx with jittered exponential backoff, honouring Retry-After."""
    retry = Retry(total=attempts - 1, backoff_factor=backoff, backoff_jitter=backoff, backoff_max=30,
                  status_forcelist=RETRY_STATUSES, allowed_methods=None, respect_retry_after_header=True,
                  retry_after_max=120, raise_on_status=False)
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    return session


class CrcrClient:
    """POSTs callbacks to ``url``; with ``token``, as ``Authorization: Bearer <token>``.

    Error messages name the URL in its display form (relay.redaction), and quote the receiver's
    answer masked too: it may echo the request."""

    def __init__(self, url: str, *, token: str | None = None, attempts: int = 4, backoff: float = 1.0,
                 timeout: float = 10.0) -> None:
        self.url = url
        self.where = redact_url(url)
        self.timeout = timeout
        self.session = retrying_session(attempts, backoff)
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def send(self, body: dict) -> None:
        try:
            response = self.session.post(self.url, json=body, timeout=self.timeout)
        except requests.RequestException as exc:
            raise CallbackFailed(redact(f"POST {self.where}: {exc.__class__.__name__}: {exc}")) from None
        if response.status_code in RETRY_STATUSES:
            raise CallbackFailed(f"POST {self.where}: HTTP {response.status_code} after retries")
        if response.status_code >= 400:
            raise CallbackRejected(redact(f"POST {self.where}: HTTP {response.status_code}: {response.text[:200]}"))
