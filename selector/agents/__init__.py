"""Stage-3 agents: ``local`` (default, offline), ``embedding`` and ``llm`` (optional)."""
from selector.agents.base import Agent, TriageTask, Verdict
from selector.agents.registry import get_agent

__all__ = ["Agent", "TriageTask", "Verdict", "get_agent"]
