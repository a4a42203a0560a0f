"""The relay's tables. Every part (runner, webhook receiver, dashboard) reads and writes these.

Schema changes go through an Alembic revision in relay/storage/migrations/versions/.
"""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, TypeDecorator
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from relay.redaction import redact
from relay.storage.event_states import EventStatus


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def new_id() -> str:
    return uuid.uuid4().hex[:12]


class RedactedText(TypeDecorator):
    """Text that may quote a configured URL or token (errors, notes): masked on its way into the database,
    whichever code path writes it (ORM attribute or conditional UPDATE)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return redact(value)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Event(Base):
    """An upstream change event as received: GitHub webhook or CRCR repository_dispatch."""

    __tablename__ = "events"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    received_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    source: Mapped[str] = mapped_column(String(16))  # github | crcr | cli
    event_type: Mapped[str] = mapped_column(String(64))  # pull_request, push, repository_dispatch, ...
    delivery_id: Mapped[str | None] = mapped_column(String(128), unique=True)  # X-GitHub-Delivery: dedupe
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default=EventStatus.RECEIVED)  # relay.storage.event_states
    note: Mapped[str | None] = mapped_column(RedactedText)
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id"))


class Run(Base):
    """One selection + execution of upstream tests on spyre for a change from_ref -> to_ref."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)  # relay.runs.states.RunStatus
    trigger: Mapped[str] = mapped_column(String(16), default="cli")  # cli | webhook | crcr | dashboard (a re-run)
    upstream: Mapped[str | None] = mapped_column(RedactedText)  # credentials masked: see pipeline._upstream_spec
    from_ref: Mapped[str] = mapped_column(String(128))
    to_ref: Mapped[str] = mapped_column(String(128))
    from_sha: Mapped[str | None] = mapped_column(String(64))
    to_sha: Mapped[str | None] = mapped_column(String(64))
    executor: Mapped[str] = mapped_column(String(16), default="local")
    shards: Mapped[int] = mapped_column(Integer, default=1)
    considered: Mapped[int] = mapped_column(Integer, default=0)  # tests the selector looked at
    selected: Mapped[int] = mapped_column(Integer, default=0)
    funnel: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # counts per stage
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # outcome counts, new failures
    output_dir: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(RedactedText)
    # The torch each side ran on and the device's state there (relay/envs):
    # {"from": {"build": {...}, "torch_version", "device": {...}, "env"}, "to": {...}}; None before resolution.
    torch: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    results: Mapped[list[TestResult]] = relationship(back_populates="run", cascade="all, delete-orphan")
    explanations: Mapped[list[Explanation]] = relationship(back_populates="run", cascade="all, delete-orphan")
    reports: Mapped[list[Report]] = relationship(back_populates="run", cascade="all, delete-orphan")


class Explanation(Base):
    """Why one test was selected or dropped in a run (mirrors explanations.json)."""

    __tablename__ = "explanations"
    __table_args__ = (Index("ix_explanations_run_test", "run_id", "test_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    test_id: Mapped[str] = mapped_column(Text)
    selected: Mapped[bool] = mapped_column(Boolean)
    stage: Mapped[str] = mapped_column(String(16))  # diff | rules | agent | verify
    reason: Mapped[str] = mapped_column(Text)
    rule: Mapped[str | None] = mapped_column(Text)
    evidence: Mapped[list[Any]] = mapped_column(JSON, default=list)
    position: Mapped[int | None] = mapped_column(Integer)  # execution order when selected
    shard: Mapped[int | None] = mapped_column(Integer)

    run: Mapped[Run] = relationship(back_populates="explanations")


class TestResult(Base):
    """One executed test (mirrors a line of results.jsonl)."""

    __tablename__ = "test_results"
    __test__ = False  # not a pytest class
    __table_args__ = (
        Index("ix_test_results_run", "run_id", "outcome"),
        Index("ix_test_results_normalised", "normalised_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    test_id: Mapped[str] = mapped_column(Text)
    normalised_id: Mapped[str] = mapped_column(Text)
    file: Mapped[str] = mapped_column(Text)
    shard: Mapped[int] = mapped_column(Integer, default=0)
    outcome: Mapped[str] = mapped_column(String(16))  # relay.execution.outcomes.Outcome
    duration: Mapped[float] = mapped_column(Float, default=0.0)
    message: Mapped[str | None] = mapped_column(Text)
    traceback: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    flaky: Mapped[bool] = mapped_column(Boolean, default=False)
    # relay.reporting.verdicts: new_failure | known_failure | still_failing | fixed | ok (vs rules and history)
    verdict: Mapped[str | None] = mapped_column(String(16))
    sim_stats: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    run: Mapped[Run] = relationship(back_populates="results")


class Report(Base):
    """One report back to the outside world (CRCR callback, GitHub check run) with retry state."""

    __tablename__ = "reports"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    target: Mapped[str] = mapped_column(String(16))  # crcr | github_check
    status: Mapped[str] = mapped_column(String(16), default="pending")  # relay.reporting.report_states.ReportStatus
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(RedactedText)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    external_id: Mapped[str | None] = mapped_column(String(128))  # e.g. check run id
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    run: Mapped[Run] = relationship(back_populates="reports")


class EvalRun(Base):
    """One `relay-cli eval` replay: how the selector did on a change with known outcomes."""

    __tablename__ = "eval_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    upstream: Mapped[str | None] = mapped_column(Text)
    from_ref: Mapped[str] = mapped_column(String(128))
    to_ref: Mapped[str] = mapped_column(String(128))
    agent: Mapped[str] = mapped_column(String(16), default="local")
    regressions: Mapped[int] = mapped_column(Integer, default=0)
    # The selector's row of the report (docs/eval.md): recall, selected share, ordering quality.
    test_recall: Mapped[float | None] = mapped_column(Float)
    cause_recall: Mapped[float | None] = mapped_column(Float)
    fraction_by_count: Mapped[float | None] = mapped_column(Float)
    fraction_by_duration: Mapped[float | None] = mapped_column(Float)
    apfdc: Mapped[float | None] = mapped_column(Float)
    selector_seconds: Mapped[float | None] = mapped_column(Float)
    report: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # eval.json as written


class Lease(Base):
    """Ownership of a piece of work ("event:<id>", "shard:<run>:<n>") until ``expires_at``; see storage/leases.py."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(160), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), index=True)
    taken_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
