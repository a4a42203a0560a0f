"""``selector.select``: the public entry point of the four-stage selector."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from selector.budget import make_budget
from selector.errors import SelectorError
from selector.history import History
from selector.model import Selection
from selector.pipeline import check_stages, run
from selector.stages.base import Progress, SelectContext
from testdefs import version_from_ref


def open_source(source: Any, cache_dir: str | Path | None = None) -> Any:
    """An UpstreamSource as given, or one opened from a path or URL."""
    if isinstance(source, (str, Path)):
        from selector.upstream import open_upstream
        # absolute: git resolves a relative worktree path against the upstream repo, not our cwd
        cache = Path(cache_dir or Path(".relay") / "cache").resolve()
        return open_upstream(str(source), cache_dir=cache)
    return source


def load_rules(rules: Any) -> tuple[Any, list[Path]]:
    """(RuleSet or None, the rule paths for the pytest plugin)."""
    if rules is None:
        return None, []
    if isinstance(rules, (str, Path)) or (isinstance(rules, (list, tuple)) and all(isinstance(r, (str, Path)) for r in rules)):
        paths = [Path(rules)] if isinstance(rules, (str, Path)) else [Path(r) for r in rules]
        for path in paths:
            if not path.exists():
                raise SelectorError(f"rules path {path} does not exist", hint="pass --rules FILE_OR_DIR")
        from testdefs import load_rules as load
        return load(paths), paths
    # a RuleSet loaded elsewhere: its files (when they are paths here) go to the collection's plugin
    return rules, [Path(p) for p in getattr(rules, "sources", []) or [] if Path(p).exists()]


def load_history(history: Any) -> History:
    if history is None:
        return History()
    if isinstance(history, History):
        return history
    if isinstance(history, (str, Path)):
        return History.load([history])
    if isinstance(history, Iterable):
        return History.load(list(history))
    raise TypeError(f"history must be a History or paths, not {type(history).__name__}")


def select(source: Any, from_ref: str, to_ref: str, *, rules: Any = None, agent: str = "local",
           budget: str | float | None = None, time_budget: str | float | None = None, shards: int = 1,
           history: Any = None, stages: tuple[str, ...] = ("diff", "rules", "agent", "verify"),
           progress: Progress | None = None, allow_agent_drop: bool = False,
           agent_options: dict[str, Any] | None = None, torch_version: str | None = None,
           cache_dir: str | Path | None = None, pytest_runner: Any = None) -> Selection:
    """Select the upstream tests a change ``from_ref..to_ref`` can affect on spyre.

    Every test considered ends with one decision (selected or dropped, the stage, the
    rule or rationale). The same inputs give the same selection, byte for byte.
    """
    if not isinstance(shards, int) or shards < 1:
        raise SelectorError(f"shards must be a positive integer, got {shards!r}", hint="e.g. --shards 4")
    stage_names = check_stages(tuple(stages))
    rule_set, _ = load_rules(rules)
    ctx = SelectContext(
        source=open_source(source, cache_dir), from_ref=from_ref, to_ref=to_ref, rules=rule_set,
        history=load_history(history), agent=agent, agent_options=dict(agent_options or {}),
        allow_agent_drop=allow_agent_drop, budget=make_budget(budget, time_budget), shards=shards,
        torch_version=torch_version or version_from_ref(to_ref), progress=progress, pytest_runner=pytest_runner)
    return run(ctx, stage_names)
