"""How a rule's ``match`` pattern, file path and op names meet a parsed test id.

Patterns are matched against normalised names (``TestCommon::test_add``: device class suffix,
device and dtype suffixes removed by ``testdefs.ids``), so one entry covers
``TestCommonPRIVATEUSE1`` and ``TestCommonSPYRE`` and every dtype variant. Matching is whole-name:
an exact pattern never hits ``test_storage_error_no_attribute`` when it says ``test_storage_error``.
"""
from __future__ import annotations

import enum
import fnmatch
import re
from dataclasses import dataclass

from testdefs import ids


class PatternKind(enum.Enum):
    regex = "regex"
    glob = "glob"
    method = "method"  # exact method name, any class of the file
    class_method = "class_method"  # exact Class::method

    @property
    def rank(self) -> int:
        """Specificity: exact Class::method over exact method over glob and regex (equal)."""
        return {"regex": 1, "glob": 1, "method": 2, "class_method": 3}[self.value]


@dataclass(frozen=True, slots=True)  # slots: a large rules file holds hundreds of thousands
class NamePattern:
    text: str
    kind: PatternKind
    class_name: str | None  # exact patterns: normalised class, if given
    method: str | None  # exact patterns: normalised method base
    dtypes: tuple[str, ...]  # exact patterns naming a dtype variant (test_x_spyre_float64) imply it
    regex: re.Pattern[str] | None = None

    @classmethod
    def compile(cls, text: str) -> NamePattern:
        if text.startswith("re:"):
            return cls(text, PatternKind.regex, None, None, (), re.compile(text[3:]))
        if any(ch in text for ch in "*?["):
            return cls(text, PatternKind.glob, None, None, ())
        class_part, _, method_part = text.rpartition("::")
        base, _device, dtypes = ids.split_method(method_part)
        if class_part:
            return cls(text, PatternKind.class_method, ids.strip_class_suffix(class_part), base, dtypes)
        return cls(text, PatternKind.method, None, base, dtypes)

    @property
    def qualified(self) -> bool:
        return "::" in self.text

    def matches(self, class_base: str | None, method_base: str) -> bool:
        """Does the pattern name this (normalised) test? Dtype implications are checked by the caller."""
        if self.kind is PatternKind.class_method:
            return class_base == self.class_name and method_base == self.method
        if self.kind is PatternKind.method:
            return method_base == self.method
        if self.qualified:
            if class_base is None:
                return False
            subject = f"{class_base}::{method_base}"
        else:
            subject = method_base
        if self.kind is PatternKind.glob:
            return fnmatch.fnmatchcase(subject, _normalise_glob_class(self.text))
        assert self.regex is not None
        return self.regex.fullmatch(subject) is not None


def _normalise_glob_class(text: str) -> str:
    class_part, sep, rest = text.partition("::")
    return ids.strip_class_suffix(class_part) + sep + rest if sep else text


def path_covers(rule_path: str, test_file: str) -> bool:
    """Does a rules file section (``test/test_ops.py``, or a glob) cover this test id's file?

    Ids made from absolute paths (the test base under plain unittest) end with the rule path.
    """
    rule = rule_path.replace("\\", "/").removeprefix("./")
    file = test_file.replace("\\", "/").removeprefix("./")
    if any(ch in rule for ch in "*?["):
        return fnmatch.fnmatchcase(file, rule) or fnmatch.fnmatchcase(file, "*/" + rule)
    return file == rule or file.endswith("/" + rule)


def op_matches(listed: str, op: str) -> bool:
    """``div`` covers ``div`` and its variants ``div.floor_rounding``; full names match exactly."""
    return op == listed or op.startswith(listed + ".")


def formatted_op(op: str) -> str:
    """The suffix upstream puts in test names for an OpInfo (``OpInfo.formatted_name``)."""
    return op.replace(".", "_")


def source_matches(glob: str, path: str) -> bool:
    """Relevance source globs: fnmatch, where ``*`` and ``**`` both cross ``/``."""
    return fnmatch.fnmatchcase(path.replace("\\", "/").removeprefix("./"), glob.replace("**", "*"))
