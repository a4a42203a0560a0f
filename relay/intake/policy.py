"""Trigger policy: which repositories, branches, tags, actions and labels start runs.

Loaded from a YAML file (``relay-cli serve --policy FILE``); every field has a default that
suits a relay watching pytorch/pytorch, so the file only lists what differs.
"""
from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from relay.config import read_yaml_mapping
from relay.errors import UserError


class TriggerPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repositories: list[str] = Field(default_factory=lambda: ["pytorch/pytorch"])
    pull_request_actions: list[str] = Field(
        default_factory=lambda: ["opened", "reopened", "synchronize", "ready_for_review"])
    # Draft PRs: "skip" waits for `ready_for_review` (which starts the run), "run" tests drafts too.
    drafts: Literal["skip", "run"] = "skip"
    # A `labeled` action starts a run only for these labels (CRCR's ciflow/crcr/<device>).
    trigger_labels: list[str] = Field(default_factory=lambda: ["ciflow/crcr/spyre"])
    branches: list[str] = Field(default_factory=lambda: ["main", "release/*"])  # PR bases and pushes
    tags: list[str] = Field(default_factory=lambda: ["v*", "ciflow/*"])
    # GitHub check runs: never, only while the PR carries a trigger label (CRCR L3), or always (L4).
    check_runs: Literal["off", "label", "always"] = "label"
    check_name: str = "spyre/upstream"
    # Names of check runs this relay owns: a `check_run.rerequested` for others is ignored.
    check_prefix: str = "spyre/"
    # Merged-only: a PR starts a run once it is merged (its `closed` delivery), and the merge state
    # and commit come from the GitHub API, not the payload (unreliable in dispatch envelopes).
    merged_only: bool = False

    def watches(self, repository: str) -> bool:
        return repository.lower() in {r.lower() for r in self.repositories}

    def branch_allowed(self, branch: str) -> bool:
        return any(fnmatchcase(branch, pattern) for pattern in self.branches)

    def tag_allowed(self, tag: str) -> bool:
        return any(fnmatchcase(tag, pattern) for pattern in self.tags)

    def wants_check_run(self, labels: tuple[str, ...]) -> bool:
        if self.check_runs == "always":
            return True
        return self.check_runs == "label" and any(label in self.trigger_labels for label in labels)


def load_policy(path: Path | None) -> TriggerPolicy:
    """The policy in ``path`` (defaults when None); a bad file is a one-line UserError."""
    if path is None:
        return TriggerPolicy()
    data = read_yaml_mapping(Path(path), "trigger policy")
    try:
        return TriggerPolicy(**data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise UserError(f"trigger policy {path}: field '{field}': {first['msg']}") from None
