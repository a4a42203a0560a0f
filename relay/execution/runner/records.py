"""The structured record of one executed test: what the runner produces and storage keeps."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

TRACEBACK_LINES = 40  # keep the end of a traceback: that is where the error is


@dataclass
class TestRecord:
    """One test's result; ``test_id`` is the upstream id (``test/test_foo.py::Class::test``)."""

    __test__ = False  # not a pytest class

    test_id: str
    outcome: str  # an Outcome (relay.execution.outcomes)
    duration: float = 0.0
    message: str | None = None
    traceback: str | None = None
    sim_stats: dict[str, Any] = field(default_factory=dict)
    shard: int = 0
    attempts: int = 1
    flaky: bool = False
    strict_xfail: bool = False  # xpassed under a strict xfail (pytest reports it as a failure)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestRecord:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    @property
    def file(self) -> str:
        return self.test_id.split("::", 1)[0]


def trim_traceback(text: str | None, lines: int = TRACEBACK_LINES) -> str | None:
    if not text:
        return text
    kept = text.rstrip().splitlines()
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join([f"... ({len(kept) - lines} lines trimmed)", *kept[-lines:]])


def first_line(text: str | None, limit: int = 500) -> str | None:
    """The error message a human reads first: the last 'E   ' line of a pytest report, else the last line."""
    if not text:
        return text
    lines = [line for line in text.strip().splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    chosen = errors[0] if errors else lines[-1].strip()
    return chosen[:limit]
