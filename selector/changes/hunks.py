"""Diff hunks between two texts, in unified-diff header form, for evidence."""
from __future__ import annotations

import bisect
import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"

    def touches_new(self, lo: int, hi: int) -> bool:
        end = self.new_start + max(self.new_len, 1) - 1
        return self.new_start <= hi and end >= lo

    def touches_old(self, lo: int, hi: int) -> bool:
        end = self.old_start + max(self.old_len, 1) - 1
        return self.old_start <= hi and end >= lo


def hunks(old: str | None, new: str | None) -> list[Hunk]:
    a = (old or "").splitlines()
    b = (new or "").splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Hunk(i1 + 1 if i2 > i1 else i1, i2 - i1, j1 + 1 if j2 > j1 else j1, j2 - j1))
    return out


def hunk_for(found: list[Hunk], lo: int, hi: int, *, side: str = "new") -> str | None:
    """The first hunk touching lines ``lo..hi`` of one side (else the file's first hunk).

    Hunks come in file order, so their last lines rise: a binary search finds the candidate
    (a release-sized OpInfo diff asks this thousands of times over thousands of hunks).
    """
    if not found:
        return None
    if side == "new":
        start = bisect.bisect_left(found, lo, key=lambda h: h.new_start + max(h.new_len, 1) - 1)
    else:
        start = bisect.bisect_left(found, lo, key=lambda h: h.old_start + max(h.old_len, 1) - 1)
    for hunk in found[start:start + 2]:
        if (hunk.touches_new(lo, hi) if side == "new" else hunk.touches_old(lo, hi)):
            return hunk.header
    return found[0].header
