"""The selector's four stages, one module each, run in order by ``selector.pipeline``."""
from __future__ import annotations

from selector.stages.base import SelectContext, Stage

STAGE_ORDER = ("diff", "rules", "agent", "verify")


def stage_for(name: str) -> Stage:
    """The stage object for a stage name (imported lazily: verify pulls in subprocess code only when used)."""
    if name == "diff":
        from selector.stages.diff import DiffStage
        return DiffStage()
    if name == "rules":
        from selector.stages.rules import RulesStage
        return RulesStage()
    if name == "agent":
        from selector.stages.agent import AgentStage
        return AgentStage()
    if name == "verify":
        from selector.stages.verify import VerifyStage
        return VerifyStage()
    raise ValueError(f"unknown stage {name!r}; expected one of {', '.join(STAGE_ORDER)}")


__all__ = ["STAGE_ORDER", "SelectContext", "Stage", "stage_for"]
