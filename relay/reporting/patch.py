"""testdefs-patch.yaml: the rule changes a run proposes, for a maintainer to review and merge.

``add`` lists entries (valid testdefs entries) for new consistent failures, grouped by upstream
file and by normalised test, restricted to the failing dtypes when other dtypes passed.
``promote`` lists strict-xfail entries whose tests now pass: change their mode to
mandatory_success. Flaky failures are never proposed (they passed on a re-run).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import yaml

from relay.execution.runner.records import TestRecord
from relay.reporting.verdicts import FIXED, NEW_FAILURE, guess_category
from testdefs.ids import parse
from testdefs.matching import formatted_op

# A crash or a hang cannot be xfailed in the process that runs the file: skip it.
MODE_FOR_CATEGORY = {"crash": "skip", "timeout": "skip"}


@dataclass
class Judged:
    record: TestRecord
    verdict: str
    normalised: str
    rule_entry: str | None = None  # file:line of the deciding testdefs entry
    rule_pattern: str | None = None
    ops: tuple[str, ...] = ()  # OpInfo names the selector's evidence ties to this test

    def rule_name(self) -> tuple[str, str | None]:
        """(``Class::method`` a rule matches, the OpInfo op split off the method, if known)."""
        parsed = parse(self.normalised)
        method = parsed.method
        for op in sorted(self.ops, key=len, reverse=True):
            suffix = "_" + formatted_op(op)
            if method.endswith(suffix) and len(method) > len(suffix):
                method = method[: -len(suffix)]
                return "::".join(p for p in (parsed.class_name, method) if p), op
        return "::".join(p for p in (parsed.class_name, method) if p), None


def build_patch(judged: list[Judged], *, from_ref: str, to_ref: str, run_id: str) -> dict:
    by_file: dict[str, dict[str, list[Judged]]] = defaultdict(lambda: defaultdict(list))
    for item in judged:
        by_file[item.record.file][item.rule_name()[0]].append(item)
    files = []
    promote = []
    for path in sorted(by_file):
        entries = []
        for match, items in sorted(by_file[path].items()):
            failing = [i for i in items if i.verdict == NEW_FAILURE and not i.record.flaky]
            if failing:
                entries.append(_entry(match, failing, items, to_ref))
            for item in items:
                if item.verdict == FIXED:
                    promote.append({"test": item.record.test_id, "entry": item.rule_entry,
                                    "match": item.rule_pattern, "mode": "mandatory_success",
                                    "reason": "passes now under xfail_strict: promote the entry"})
        if entries:
            files.append({"path": path, "entries": entries})
    return {"version": 1, "run": run_id, "from": from_ref, "to": to_ref, "add": files,
            "promote": _dedupe(promote)}


def _entry(match: str, failing: list[Judged], all_variants: list[Judged], to_ref: str) -> dict:
    categories = sorted({guess_category(i.record) for i in failing})
    category = categories[0] if len(categories) == 1 else _worst(categories)
    first = failing[0].record
    entry: dict = {"match": match, "mode": MODE_FOR_CATEGORY.get(category, "xfail")}
    failing_dtypes = sorted({d for i in failing for d in parse(i.record.test_id).dtypes})
    passing_dtypes = {d for i in all_variants if i not in failing for d in parse(i.record.test_id).dtypes}
    if failing_dtypes and passing_dtypes - set(failing_dtypes):
        entry["dtypes"] = {"include": failing_dtypes}
    failing_ops = sorted({op for i in failing if (op := i.rule_name()[1])})
    if failing_ops:
        entry["ops"] = {"include": failing_ops}
    entry["reason"] = {"category": category, "text": _text(first), "since": _version(to_ref)}
    entry["failing"] = sorted(i.record.test_id for i in failing)  # evidence; not a schema key
    return entry


def _worst(categories: list[str]) -> str:
    for category in ("crash", "timeout", "unsupported_op", "unsupported_dtype", "numerics"):
        if category in categories:
            return category
    return categories[0]


def _text(record: TestRecord) -> str:
    text = (record.message or record.outcome).strip().splitlines()[0]
    return text[:200]


def _version(ref: str) -> str:
    return ref.removeprefix("v").removesuffix(".0") if ref.count(".") == 2 and ref.endswith(".0") else ref


def _dedupe(items: list[dict]) -> list[dict]:
    seen, out = set(), []
    for item in items:
        key = (item["entry"], item["match"])
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


HEADER = """\
# Proposed testdefs changes (review before merging into the rules files).
# add: entries for new consistent failures; copy each under its file's `entries:`
#      (the `failing` list is evidence, not a rules key).
# promote: strict xfails that pass now; set the entry's mode to mandatory_success.
"""


def dump_patch(patch: dict) -> str:
    return HEADER + yaml.safe_dump(patch, sort_keys=False, allow_unicode=True, width=110)
