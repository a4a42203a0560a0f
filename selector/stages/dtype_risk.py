"""Device-aware risk: a dtype the device does not support, in a test's variant or in the change it runs.

A new float64 case is the classic regression on a fp16-class device, and so is a change that
brings float64 into code a test runs (a shared helper that now computes its reference with
``.double()``). The rules' global ``supported_dtypes`` say what the device supports.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from selector.hunks import new_side
from selector.model import Evidence
from testdefs.ids import DTYPE_NAMES

DTYPE_RISK = 0.3  # added to the agent's score
# How code names a dtype besides torch.<name>: tensor methods and aliases.
_ALIASES = {"float64": r"\.double\(|torch\.double\b", "complex128": r"\.cdouble\(|torch\.cdouble\b",
            "complex64": r"\.cfloat\(|torch\.cfloat\b", "float16": r"\.half\(|torch\.half\b"}


def unsupported_dtypes(supported: set[str]) -> list[str]:
    return [d for d in DTYPE_NAMES if d not in supported]


class ChangeDtypeScanner:
    """Finds unsupported dtypes on the new side of the hunks stage 1 traced to a test, in one tree.

    Only stage 1's own evidence counts (its hunks hold exactly the changed lines); a hunk the agent
    found merely similar says nothing about what the test runs."""

    def __init__(self, root: Path, unsupported: list[str]) -> None:
        self.root = root
        self.patterns = {d: re.compile(rf"\b{d}\b" + (f"|{_ALIASES[d]}" if d in _ALIASES else ""))
                         for d in unsupported}
        self._files: dict[str, list[str]] = {}  # one read per file for the whole selection

    def brought_by(self, evidence: list[Evidence], variant: str | None = None) -> dict[str, str]:
        """dtype -> 'file hunk' where the change names it.

        With ``variant`` (an instantiated id), a reason tied to one OpInfo op (``Evidence.op``) counts
        only for that op's variants: a float64 hunk in ``add``'s entry says nothing about ``mul``'s.
        """
        found: dict[str, str] = {}
        method = variant.rsplit("::", 1)[-1] if variant else None
        for item in evidence:
            if not item.file or not item.hunk or (item.detail or "").startswith("similarity"):
                continue
            if method is not None and item.op and not reaches_variant(item.op, method):
                continue
            for line in self._new_lines(item.file, item.hunk):
                for dtype, pattern in self.patterns.items():
                    if dtype not in found and pattern.search(line):
                        found[dtype] = f"{item.file} {item.hunk}"
        return found

    def _new_lines(self, file: str, hunk: str) -> list[str]:
        lines = new_side(hunk)
        if lines is None:
            return []
        start, count = lines
        if file not in self._files:
            try:
                self._files[file] = (self.root / file).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._files[file] = []
        return self._files[file][max(0, start - 1): start - 1 + count]


def reaches_variant(op: str, method: str) -> bool:
    """Whether an instantiated test method (``test_foo_nn_functional_gelu_cpu_float32``) is a variant
    of OpInfo label ``op`` (``nn.functional.gelu``; dots become underscores in the name)."""
    return f"_{op_spelling(op)}_" in f"{method}_"


@functools.lru_cache(maxsize=None)  # a release asks it millions of times of a few thousand ops
def op_spelling(op: str) -> str:
    """How ``op`` is spelled inside a variant's method name (``nn.functional.gelu``: ``nn_functional_gelu``)."""
    return op.replace(".", "_").replace(" ", "_")


def spellings_in(method: str) -> set[str]:
    """Every op spelling ``reaches_variant`` finds in ``method``: each run of its underscore-separated
    words after the first (``_x_`` lies in ``method_`` exactly where x is such a run). One set per
    variant answers for hundreds of ops at once."""
    words = method.split("_")
    return {"_".join(words[i:j]) for i in range(1, len(words)) for j in range(i + 1, len(words) + 1)}
