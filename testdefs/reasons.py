"""Reasons from free text: a category inferred from the words, and an issue link.

Shared by the torch-spyre importer (reasons there are YAML comments) and `bootstrap` (reasons are
failure messages of a run on the device).
"""
from __future__ import annotations

import re

from testdefs.schema import Category

_URL = re.compile(r"https?://\S+")
_ISSUE = re.compile(r"(?:#|\bissues?\s+#?)(\d{2,6})\b", re.I)
ISSUES_URL = "https://github.com/torch-spyre/torch-spyre/issues/"
_CATEGORY_HINTS: list[tuple[Category, re.Pattern[str]]] = [
    (Category.crash, re.compile(r"segmentation fault|seg ?fault|signal received|abort|heap corruption|crash|"
                                r"exit 255", re.I)),
    (Category.not_applicable, re.compile(r"does not engage|do not engage|not invoke the torch-spyre|"
                                         r"cpu[- ]only|not applicable|no privateuse1", re.I)),
    (Category.unsupported_op, re.compile(r"notimplemented|not implemented|could not run|codegen|not registered|"
                                         r"inductorerror|stick expression|restickify|not supported|kernel missing|missing kernel", re.I)),
    (Category.infra, re.compile(r"dxp_standalone|not detected|toolchain|vfio", re.I)),
    (Category.unsupported_dtype, re.compile(r"\bdtype\b|double|complex|float64", re.I)),
    (Category.numerics, re.compile(r"not close|tolerance|precision|mismatch", re.I)),
    (Category.upstream_bug, re.compile(r"new test|added in pytorch", re.I)),
    (Category.timeout, re.compile(r"timeout|timed out", re.I)),
]


def infer_category(text: str) -> Category | None:
    for category, pattern in _CATEGORY_HINTS:
        if pattern.search(text):
            return category
    return None


def issue_of(text: str) -> str | None:
    url = _URL.search(text)
    if url:
        return url.group(0).rstrip(").,;")
    number = _ISSUE.search(text)
    return ISSUES_URL + number.group(1) if number else None


def reason_dict(category: Category, text: str) -> dict:
    """A rules-file ``reason`` mapping, with the issue link found in the text."""
    reason: dict = {"category": category.value, "text": text}
    issue = issue_of(text)
    if issue:
        reason["issue"] = issue
    return reason
