"""The fields of GitHub and CRCR payloads the relay reads, validated as untrusted input.

Only what decides a run is modelled (everything else is kept verbatim in the stored event).
SHAs must be 40 hex digits and ref names plain git refs, so nothing from a payload can be
mistaken for an option or reach a shell.
"""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Sha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
_REF_CHARS = re.compile(r"[^\s~^:?*\[\\\x00-\x1f\x7f$`;|&<>()'\"]{1,255}")


def _plain_ref(value: str) -> str:
    """git check-ref-format in brief, stricter: no leading '-', no '..', no shell metacharacters."""
    if value.startswith("-") or ".." in value or not _REF_CHARS.fullmatch(value):
        raise ValueError("not a plain git ref name (letters, digits and / . _ - only, no '..')")
    return value


RefName = Annotated[str, AfterValidator(_plain_ref)]
RepoName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]

ZERO_SHA = "0" * 40


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Repository(_Lenient):
    full_name: RepoName


class Label(_Lenient):
    name: str


class CommitRef(_Lenient):
    ref: RefName
    sha: Sha


class PullRequest(_Lenient):
    number: int
    head: CommitRef
    base: CommitRef
    labels: list[Label] = []
    merged: bool | None = None


class PullRequestEvent(_Lenient):
    action: str
    pull_request: PullRequest
    repository: Repository
    label: Label | None = None


class PushEvent(_Lenient):
    ref: RefName
    before: Sha
    after: Sha
    deleted: bool = False
    repository: Repository


class CheckRun(_Lenient):
    name: str
    head_sha: Sha
    external_id: str | None = None


class CheckRunEvent(_Lenient):
    action: str
    check_run: CheckRun
    repository: Repository


class CrcrEnvelope(_Lenient):
    """CRCR's repository_dispatch ``client_payload``: the upstream event passed through raw."""

    event_type: Literal["pull_request", "push"]
    delivery_id: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    payload: dict = Field(description="the upstream webhook body, verbatim")
    # A build of the upstream change (a torch wheel URL, or a version) for the to side to run on;
    # the same field as `relay-cli run --torch-to` (docs/runner.md "Torch per side").
    torch_build: Annotated[str, StringConstraints(min_length=1, max_length=2000)] | None = None


class RepositoryDispatchEvent(_Lenient):
    action: str
    client_payload: dict
