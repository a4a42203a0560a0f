"""What the selector must beat, at the same budget or on the same change.

- changed_files: every test in the test files the diff touches ("run the edited files").
- td_files: PyTorch target-determination style, at file level: files scored by
  EditedByPR (1.0), PreviouslyFailed (1.0) and Filepath keyword overlap (0.25), ties
  alphabetical, the top quarter of files by count run.
- random_same_count: a random subset the size of the selector's selection (mean over seeds).
"""
from __future__ import annotations

import math
import random
import re
from collections import defaultdict

from selector.eval.metrics import recall
from selector.eval.truth import Transition
from selector.history import History
from testdefs.ids import parse

_WORD = re.compile(r"[a-z][a-z0-9]+")
_NOISE = {"test", "tests", "py", "torch", "src", "aten", "native", "csrc", "internal", "testing", "core", "cpp", "yaml"}


def by_file(universe: list[str]) -> dict[str, list[str]]:
    files: dict[str, list[str]] = defaultdict(list)
    for test_id in universe:
        files[parse(test_id).file].append(test_id)
    return dict(files)


def changed_files(universe: list[str], changed_paths: list[str]) -> list[str]:
    edited = set(changed_paths)
    return [t for t in universe if parse(t).file in edited]


def _keywords(path: str) -> set[str]:
    return {w for w in _WORD.findall(path.lower().replace("_", " ")) if w not in _NOISE}


def td_files(universe: list[str], changed_paths: list[str], history: History, share: float = 0.25) -> list[str]:
    files = by_file(universe)
    edited = set(changed_paths)
    changed_words = set().union(*(_keywords(p) for p in changed_paths)) if changed_paths else set()
    failed_files = {parse(t).file for t in history.previously_failed()}
    scores = {}
    for file in files:
        score = 1.0 * (file in edited) + 1.0 * (file in failed_files)
        score += 0.25 * bool(_keywords(file) & changed_words)
        scores[file] = score
    ranked = sorted(files, key=lambda f: (-scores[f], f))
    chosen = ranked[: max(1, math.ceil(share * len(ranked)))]
    return [t for f in chosen for t in files[f]]


def random_same_count(universe: list[str], count: int, transitions: list[Transition], seeds: int = 50,
                      metric=recall) -> float | None:
    """Mean ``metric`` (recall) of ``seeds`` random subsets of ``count`` tests (seeded: deterministic)."""
    if not transitions:
        return None
    ordered = sorted(universe)
    total = 0.0
    for seed in range(seeds):
        sample = random.Random(seed).sample(ordered, min(count, len(ordered)))
        total += metric(sample, transitions) or 0.0
    return total / seeds
