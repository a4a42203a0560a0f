"""The fields of GitHub and CRCR payloads the relay reads, validated as untrusted input.

Only what decides a run is modelled (everything else is kept verbatim in the stored event).
SHAs must be 40 hex digits; ref names are anything git itself accepts (``fix(ci)`` and
``user's-branch`` are legal branch names). A ref name is only ever compared with the policy's
patterns and stored: runs use SHAs, and nothing from a payload reaches a shell or a command line.
"""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Sha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
MAX_REF = 1024  # git sets no limit; GitHub's is far below this
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def git_ref_name(value: str) -> str:
    """``git check-ref-format`` (plus --branch's "no leading '-'"), so any name git accepts passes."""
    if not value or len(value) > MAX_REF:
        raise ValueError(f"a git ref name has 1 to {MAX_REF} characters")
    if value.startswith("-"):
        raise ValueError("not a git ref name: begins with '-'")
    found = _REF_FORBIDDEN.search(value)
    if found:
        raise ValueError(f"not a git ref name: contains {found.group()!r}")
    if value == "@" or value.startswith("/") or value.endswith(("/", ".")):
        raise ValueError("not a git ref name: '@' alone, or begins with '/' or ends with '/' or '.'")
    if any(part.startswith(".") or part.endswith(".lock") for part in value.split("/")):
        raise ValueError("not a git ref name: a component begins with '.' or ends with '.lock'")
    return value


RefName = Annotated[str, AfterValidator(git_ref_name)]
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
    draft: bool = False


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
