"""A test moved or renamed between the refs keeps what was known about it under its old id.

Stage 1 pairs moved and renamed tests (``Candidate.previous_id``). The testdefs rule written for
the old id, and the old id's history on spyre, would otherwise be lost with the name: the rule
silently stops applying and an old failure no longer brings the test back.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from testdefs.ids import parse


def translate(test_id: str, from_id: str, to_id: str) -> str:
    """``test_id`` (``from_id`` itself or one of its instantiated variants) under ``to_id``'s name.

    ``file::TestFooCPU::test_new_cpu_float32`` from ``file::TestFoo::test_new`` to
    ``old_file::TestBar::test_old`` -> ``old_file::TestBarCPU::test_old_cpu_float32``.
    """
    tid, source, target = parse(test_id), parse(from_id), parse(to_id)
    method = tid.method.replace(source.method_base, target.method_base, 1)
    if tid.class_name and source.class_base and target.class_base:
        class_name = tid.class_name.replace(source.class_base, target.class_base, 1)
    else:
        class_name = target.class_name
    return "::".join(p for p in (target.file, class_name, method) if p)


class RenamedRules:
    """The testdefs RuleSet, except that a renamed test no rule names is decided by its old id's rule."""

    def __init__(self, rules: Any, renames: dict[str, str]) -> None:
        self._rules = rules
        self._renames = renames  # normalised new id -> normalised old id

    def __getattr__(self, name: str) -> Any:  # everything else is the RuleSet's
        return getattr(self._rules, name)

    def decide(self, test_id: str, **kwargs: Any):
        decision = self._rules.decide(test_id, **kwargs)
        new_id = parse(test_id).normalised
        old_id = self._renames.get(new_id)
        if decision.entry is not None or old_id is None:
            return decision
        kwargs.pop("file_path", None)  # the old id names its own file
        before = self._rules.decide(translate(test_id, new_id, old_id), **kwargs)
        if before.entry is None:
            return decision
        reason = before.reason.model_copy(update={"text": f"{before.reason.text} (rule for {old_id}, "
                                                          f"which this test was renamed or moved from)"}) \
            if before.reason is not None else None
        return dataclasses.replace(before, test_id=test_id, normalised=new_id, reason=reason)


def renames_of(candidates) -> dict[str, str]:
    return {c.test_id: c.previous_id for c in candidates if getattr(c, "previous_id", None)}
