"""Turn a delivery into a decision: start a run comparing two upstream refs, re-run, or ignore.

Pure functions of (event type, payload, policy): the receiver calls them to answer, the
worker calls them again to act, so both always agree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ValidationError

from relay.intake.payloads import (
    ZERO_SHA,
    CheckRunEvent,
    CrcrEnvelope,
    PullRequestEvent,
    PushEvent,
    RepositoryDispatchEvent,
)
from relay.intake.policy import TriggerPolicy

RELEASE_TAG = re.compile(r"^v(\d+)\.(\d+)\.0$")


class PayloadError(ValueError):
    """The payload lacks a field the event needs, or a field has the wrong form (answered 400)."""


@dataclass(frozen=True)
class ChangeRequest:
    """Which upstream change to test, and where to report about it."""

    repository: str
    from_ref: str
    to_ref: str
    head_sha: str  # the upstream commit a check run is attached to
    description: str  # e.g. "pull_request synchronize #42"
    pr_number: int | None = None
    labels: tuple[str, ...] = ()
    verify_merge: bool = False  # merged-only mode: ask GitHub for the merge before running
    torch_to: str | None = None  # a build artifact of the change for the to side (CRCR's torch_build)


@dataclass(frozen=True)
class TriggerDecision:
    action: Literal["run", "rerun", "ignore", "pong"]
    reason: str
    change: ChangeRequest | None = None
    rerun_of: str | None = None  # run id, for "rerun"
    # For CRCR envelopes: the upstream event passed through (echoed in callbacks).
    crcr: CrcrEnvelope | None = field(default=None, compare=False)

    @property
    def starts_work(self) -> bool:
        return self.action in ("run", "rerun")


def _validate(model: type[BaseModel], payload: dict, what: str) -> BaseModel:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "payload"
        raise PayloadError(f"{what} payload: field '{where}': {first['msg']}") from None


def ignore(reason: str) -> TriggerDecision:
    return TriggerDecision("ignore", reason)


def decide(event_type: str, payload: dict, policy: TriggerPolicy) -> TriggerDecision:
    """The decision for one delivery; raises PayloadError for a malformed known event."""
    if event_type == "ping":
        return TriggerDecision("pong", "ping: webhook configured")
    if event_type == "pull_request":
        return _pull_request(_validate(PullRequestEvent, payload, "pull_request"), policy)
    if event_type == "push":
        return _push(_validate(PushEvent, payload, "push"), policy)
    if event_type == "check_run":
        return _check_run(_validate(CheckRunEvent, payload, "check_run"), policy)
    if event_type == "repository_dispatch":
        return _repository_dispatch(_validate(RepositoryDispatchEvent, payload, "repository_dispatch"), policy)
    return ignore(f"event '{event_type}' is not handled")


def _pull_request(event: PullRequestEvent, policy: TriggerPolicy) -> TriggerDecision:
    repo, pr = event.repository.full_name, event.pull_request
    if not policy.watches(repo):
        return ignore(f"repository {repo} is not watched")
    if policy.merged_only:
        return _merged_pull_request(event, policy)
    if event.action == "labeled":
        label = event.label.name if event.label else ""
        if label not in policy.trigger_labels:
            return ignore(f"label '{label}' is not a trigger label")
    elif event.action not in policy.pull_request_actions:
        return ignore(f"pull_request action '{event.action}' does not start runs")
    if pr.draft and policy.drafts == "skip":
        return ignore(f"PR #{pr.number} is a draft: its run starts when it is ready for review")
    if not policy.branch_allowed(pr.base.ref):
        return ignore(f"pull request targets branch '{pr.base.ref}', not a watched branch")
    change = ChangeRequest(repository=repo, from_ref=pr.base.sha, to_ref=pr.head.sha, head_sha=pr.head.sha,
                           description=f"pull_request {event.action} #{pr.number}", pr_number=pr.number,
                           labels=tuple(label.name for label in pr.labels))
    return TriggerDecision("run", change.description, change)


def _merged_pull_request(event: PullRequestEvent, policy: TriggerPolicy) -> TriggerDecision:
    """Merged-only mode: only `closed` starts a run, whatever the payload's `merged` says; the worker
    checks the merge and takes its commit from GitHub before the run is created."""
    repo, pr = event.repository.full_name, event.pull_request
    if event.action != "closed":
        return ignore(f"merged-only mode: pull_request {event.action} does not start runs, a merge does")
    if not policy.branch_allowed(pr.base.ref):
        return ignore(f"pull request targets branch '{pr.base.ref}', not a watched branch")
    change = ChangeRequest(repository=repo, from_ref=pr.base.sha, to_ref=pr.head.sha, head_sha=pr.head.sha,
                           description=f"pull_request merged #{pr.number}", pr_number=pr.number,
                           labels=tuple(label.name for label in pr.labels), verify_merge=True)
    return TriggerDecision("run", change.description, change)


def _push(event: PushEvent, policy: TriggerPolicy) -> TriggerDecision:
    repo = event.repository.full_name
    if not policy.watches(repo):
        return ignore(f"repository {repo} is not watched")
    if event.deleted or event.after == ZERO_SHA:
        return ignore(f"push deletes {event.ref}")
    if event.ref.startswith("refs/heads/"):
        name = event.ref.removeprefix("refs/heads/")
        if not policy.branch_allowed(name):
            return ignore(f"push to branch '{name}', not a watched branch")
    elif event.ref.startswith("refs/tags/"):
        name = event.ref.removeprefix("refs/tags/")
        if not policy.tag_allowed(name):
            return ignore(f"push of tag '{name}', not a watched tag")
    else:
        return ignore(f"push to {event.ref}, neither a branch nor a tag")
    from_ref, to_ref = event.before, event.after
    if from_ref == ZERO_SHA:  # a new ref: only a release tag has a natural base, the previous minor
        release = RELEASE_TAG.match(name) if event.ref.startswith("refs/tags/") else None
        if not release or int(release.group(2)) == 0:
            return ignore(f"new ref {event.ref} has no base to compare with")
        # Release to release by tag name, as `relay-cli run --from 2.13 --to 2.14` compares them.
        from_ref, to_ref = f"v{release.group(1)}.{int(release.group(2)) - 1}.0", name
    change = ChangeRequest(repository=repo, from_ref=from_ref, to_ref=to_ref, head_sha=event.after,
                           description=f"push {event.ref}")
    return TriggerDecision("run", change.description, change)


def _check_run(event: CheckRunEvent, policy: TriggerPolicy) -> TriggerDecision:
    if event.action != "rerequested":
        return ignore(f"check_run action '{event.action}' does not start runs")
    if not policy.watches(event.repository.full_name):
        return ignore(f"repository {event.repository.full_name} is not watched")
    if not event.check_run.name.startswith(policy.check_prefix):
        return ignore(f"check run '{event.check_run.name}' is not one of this relay's")
    if not event.check_run.external_id:
        return ignore("re-requested check run has no external_id naming the relay run")
    return TriggerDecision("rerun", f"check_run rerequested for run {event.check_run.external_id}",
                    rerun_of=event.check_run.external_id)


def _repository_dispatch(event: RepositoryDispatchEvent, policy: TriggerPolicy) -> TriggerDecision:
    if event.action not in ("pull_request", "push"):
        return ignore(f"repository_dispatch type '{event.action}' is not a CRCR envelope")
    envelope = _validate(CrcrEnvelope, event.client_payload, "repository_dispatch client_payload")
    inner = decide(envelope.event_type, envelope.payload, policy)
    change = inner.change
    if change is not None and envelope.torch_build:
        change = replace(change, torch_to=envelope.torch_build)
    return TriggerDecision(inner.action, f"CRCR {envelope.delivery_id}: {inner.reason}", change,
                    inner.rerun_of, crcr=envelope)
