"""Which agent ``--agent NAME`` means. Apart from ``base`` because every agent imports ``base``."""
from __future__ import annotations

from selector.agents.base import Agent
from selector.errors import SelectorError


def get_agent(name: str, **options) -> Agent:
    """The provider for ``--agent NAME``; optional providers import their extras lazily."""
    if name == "local":
        from selector.agents.local import LocalAgent
        return LocalAgent(**options)
    if name == "embedding":
        from selector.agents.embedding import EmbeddingAgent
        return EmbeddingAgent(**options)
    if name == "llm":
        from selector.agents.llm import LLMAgent
        return LLMAgent(**options)
    raise SelectorError(f"unknown agent '{name}'", hint="expected --agent local, embedding or llm")
