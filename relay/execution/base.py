"""What every executor receives and promises.

An executor runs shards and stores each shard's results through ``store_shard`` (exactly once);
the pipeline reads them back from the database, so the database is the one source of truth
whether a shard ran in this process or on a Celery worker elsewhere.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from relay.execution.runner import RunnerOptions, TestRecord


@dataclass
class ShardJob:
    """One shard of one run, in a form that crosses a broker (JSON)."""

    run_id: str
    shard: int
    tests: list[str]
    upstream: str  # spec for selector.upstream.open_upstream: a worker checks out by itself
    sha: str | None
    checkout: str | None = None  # an existing checkout on this machine, used when present
    rules: list[str] = field(default_factory=list)
    test_timeout: float = 300.0
    shard_timeout: float = 3600.0
    reruns: int = 1
    torch: dict[str, Any] | None = None  # relay.envs.TorchBuild of this side; None: the installed torch
    backend_dir: str | None = None  # the spyre sources built into that torch's environment (default: bundled)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShardJob:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def runner_options(self, python: str | None = None) -> RunnerOptions:
        options = RunnerOptions(test_timeout=self.test_timeout, shard_timeout=self.shard_timeout,
                                reruns=self.reruns, rules=list(self.rules))
        if python:
            options.python = python
        return options

    @property
    def task_id(self) -> str:
        """Deterministic, so a re-dispatch of the same shard is recognisably the same task."""
        return f"relay-{self.run_id}-shard-{self.shard}"


@dataclass
class ShardDone:
    shard: int
    stored: bool  # False: an earlier delivery had already stored this shard
    counts: dict[str, int]


OnShardDone = Callable[[ShardDone], None]
OnRecord = Callable[[TestRecord], None]


class Executor(Protocol):
    name: str

    def execute(self, jobs: list[ShardJob], *, on_shard_done: OnShardDone | None = None,
                on_record: OnRecord | None = None) -> list[ShardDone]:
        """Run every job and store its results; returns when all are stored (or raises)."""


def resolve_checkout(job: ShardJob, cache_dir: Path) -> Path:
    """The upstream tree to run ``job`` in: the given checkout, else a checkout of ``job.sha``."""
    if job.checkout and Path(job.checkout, "test").is_dir():
        return Path(job.checkout)
    from selector.upstream import open_upstream  # the selector is needed only on remote workers

    return Path(open_upstream(job.upstream, cache_dir=cache_dir).checkout(job.sha))


def resolve_python(job: ShardJob, cache_dir: Path) -> str | None:
    """The interpreter of the job's torch: its environment, made or reused on this machine (a Celery
    worker elsewhere builds its own, under the same lock discipline); None for the installed torch."""
    if not job.torch:
        return None
    from relay.envs import EnvManager, TorchBuild
    from relay.envs.device_build import BACKEND

    manager = EnvManager(cache_dir, backend=Path(job.backend_dir) if job.backend_dir else BACKEND)
    return str(manager.ensure(TorchBuild.from_dict(job.torch)).python)


def counts_of(records: list[TestRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[record.outcome] = counts.get(record.outcome, 0) + 1
    return counts
