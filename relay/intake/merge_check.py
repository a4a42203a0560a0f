"""Merged-only mode: what GitHub says about a PR's merge, independent of the delivery's payload.

CRCR's operators found `pull_request.merged` unreliable in dispatch payloads and
`merge_commit_sha` stale or empty, so the run's refs come from the API: the merge commit
and its first parent (the base branch just before the merge); without a merge commit, the
base branch's head.
"""
from __future__ import annotations

from dataclasses import replace

import requests
from github import Auth, Github, GithubException, GithubRetry

from relay.config import Settings
from relay.intake.events import ChangeRequest


class MergeUnverified(Exception):
    """GitHub could not be asked (network, rate limit, 5xx): try again later."""


def merged_change(settings: Settings, change: ChangeRequest) -> ChangeRequest | str:
    """``change`` with the refs of its merge, or why it does not run (not merged)."""
    auth = Auth.Token(settings.github_token) if settings.github_token else None
    github = Github(auth=auth, base_url=settings.github_api_url.rstrip("/"), lazy=True, timeout=30,
                    retry=GithubRetry(total=2, backoff_factor=0.5))
    try:
        repo = github.get_repo(change.repository)
        pr = repo.get_pull(change.pr_number)
        if not pr.merged:
            return f"GitHub says PR #{change.pr_number} is not merged ({pr.state}); merged-only mode runs merges"
        merge_sha = pr.merge_commit_sha or repo.get_branch(pr.base.ref).commit.sha
        parents = repo.get_commit(merge_sha).parents
    except GithubException as exc:
        if exc.status == 404:
            return f"GitHub knows no PR #{change.pr_number} in {change.repository}"
        raise MergeUnverified(f"GitHub answered HTTP {exc.status} for PR #{change.pr_number}") from None
    except requests.exceptions.RetryError:  # PyGithub's retries on 5xx and rate limits ran out
        raise MergeUnverified(f"GitHub kept failing for PR #{change.pr_number} after retries") from None
    except requests.RequestException as exc:
        raise MergeUnverified(f"GitHub unreachable: {exc.__class__.__name__}") from None
    base = parents[0].sha if parents else change.from_ref
    return replace(change, from_ref=base, to_ref=merge_sha, head_sha=merge_sha, verify_merge=False)
