"""The one error testdefs raises for bad rules: every problem, each as ``file:line: field: expected``."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a rules file."""

    file: str
    line: int | None
    field: str  # dotted path such as ``files[0].entries[2].mode``; "" for the whole document
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field or '(document)'}: {self.message}"


class HintedError(Exception):
    """A mistake the user can fix, as one line: what is wrong, then (how to fix it).

    Here, in the package every other part depends on, so the selector's and the relay's user
    errors share it.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} ({self.hint})" if self.hint else text


class RulesError(ValueError):
    """Rules could not be loaded. ``problems`` lists all of them; ``str()`` gives one line each."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def format_loc(loc: Sequence[str | int]) -> str:
    """``("files", 0, "mode")`` -> ``files[0].mode``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
