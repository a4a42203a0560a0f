"""GitHub check runs on the upstream commit, through PyGithub.

``base_url`` is the REST API root (RELAY_GITHUB_API_URL): api.github.com, a GitHub
Enterprise ``https://HOST/api/v3``, or a local stand-in in tests.
"""
from __future__ import annotations

import requests
from github import Auth, Github, GithubException, GithubRetry

MAX_SUMMARY = 65535  # GitHub rejects a longer output.summary


class CheckRunFailed(Exception):
    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class CheckRuns:
    def __init__(self, token: str, base_url: str, *, retries: int = 3, throttle: bool = True) -> None:
        # PyGithub's GithubRetry backs off on 5xx and on rate limits, honouring Retry-After.
        pacing = {} if throttle else {"seconds_between_requests": None, "seconds_between_writes": None}
        self._github = Github(auth=Auth.Token(token), base_url=base_url.rstrip("/"),
                              retry=GithubRetry(total=retries, backoff_factor=0.5), lazy=True, **pacing)

    def _repo(self, full_name: str):
        return self._github.get_repo(full_name)  # lazy: no GET of the repository first

    def start(self, repository: str, *, name: str, head_sha: str, details_url: str | None,
              external_id: str) -> int:
        """Create an in_progress check run; returns its id."""
        extra = {"details_url": details_url} if details_url else {}
        try:
            check = self._repo(repository).create_check_run(name=name, head_sha=head_sha, status="in_progress",
                                                            external_id=external_id, **extra)
        except (GithubException, requests.RequestException) as exc:
            raise _failure("create check run", exc) from None
        return check.id

    def complete(self, repository: str, *, check_id: int | None, name: str, head_sha: str,
                 details_url: str | None, external_id: str, conclusion: str, title: str,
                 summary: str) -> int:
        """Complete check ``check_id``; without one (its start was never reported) create it completed."""
        output = {"title": title[:255], "summary": summary[:MAX_SUMMARY]}
        extra = {"details_url": details_url} if details_url else {}
        repo = self._repo(repository)
        try:
            if check_id is None:
                check = repo.create_check_run(name=name, head_sha=head_sha, status="completed",
                                              conclusion=conclusion, external_id=external_id,
                                              output=output, **extra)
                return check.id
            repo.get_check_run(check_id).edit(status="completed", conclusion=conclusion, output=output)
            return check_id
        except (GithubException, requests.RequestException) as exc:
            raise _failure("complete check run", exc) from None


def _failure(what: str, exc: Exception) -> CheckRunFailed:
    if not isinstance(exc, GithubException):  # network: worth another try later
        return CheckRunFailed(f"GitHub {what}: {exc.__class__.__name__}: {exc}", retryable=True)
    message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
    return CheckRunFailed(f"GitHub {what}: HTTP {exc.status}: {message}",
                          retryable=exc.status in (403, 429) or exc.status >= 500)
