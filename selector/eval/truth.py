"""Ground truth: which spyre tests changed outcome between the two refs.

From the demo upstream's ``demo-changeset.json`` (declared by hand with the change) or
from full-suite results at both refs (``results.jsonl``), where a transition is a test
that passed at the old ref and failed at the new one (regression) or the reverse (fixed).
Records marked flaky, or whose outcome needed reruns, are left out.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from selector.errors import SelectorError
from selector.history import FAILING_OUTCOMES
from testdefs.ids import parse

PASSING = frozenset({"passed"})


@dataclass(frozen=True)
class Transition:
    test: str  # normalised id, or an instantiated id when the truth knows it
    kind: str  # regression (pass -> fail) | fixed (fail -> pass)
    cause: str  # root cause: tests with one cause form one cluster
    dtype: str | None = None

    def matches(self, test_id: str) -> bool:
        """Does a selected id (instantiated or normalised) run this transition's test?"""
        if test_id == self.test:
            return True
        parsed, wanted = parse(test_id), parse(self.test)
        if parsed.normalised != wanted.normalised:
            return False
        if wanted.dtypes:  # the truth names an instantiated variant
            return parsed.dtypes == wanted.dtypes or not parsed.dtypes
        return self.dtype is None or not parsed.dtypes or self.dtype in parsed.dtypes


@dataclass
class GroundTruth:
    transitions: list[Transition] = field(default_factory=list)
    source: str = ""

    def of_kind(self, kind: str) -> list[Transition]:
        return [t for t in self.transitions if t.kind == kind]

    @classmethod
    def from_demo_changeset(cls, path: Path) -> "GroundTruth":
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise SelectorError(f"ground truth {path}: cannot read: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise SelectorError(f"ground truth {path}:{exc.lineno}: not JSON: {exc.msg}") from None
        if not isinstance(data, dict) or "expected_regressions" not in data:
            raise SelectorError(f"ground truth {path}: no 'expected_regressions' list",
                            hint="pass the demo-changeset.json written by relay-cli demo init")
        out = []
        for kind, key, why in (("regression", "expected_regressions", "why"), ("fixed", "fixed", "was")):
            for item in data.get(key) or []:
                out.append(Transition(test=item["test"], kind=kind, dtype=item.get("dtype"),
                                      cause=str(item.get("cause") or item.get(why) or item["test"])))
        return cls(out, str(path))

    @classmethod
    def from_results(cls, before: Path, after: Path) -> "GroundTruth":
        """Transitions between two full runs' results.jsonl; flaky records are ignored."""
        old, new = _outcomes(before), _outcomes(after)
        out = []
        for test_id in sorted(old.keys() & new.keys()):
            was, now = old[test_id], new[test_id]
            if was in PASSING and now in FAILING_OUTCOMES:
                out.append(Transition(test=test_id, kind="regression", cause=parse(test_id).normalised))
            elif was in FAILING_OUTCOMES and now in PASSING:
                out.append(Transition(test=test_id, kind="fixed", cause=parse(test_id).normalised))
        return cls(out, f"{before} -> {after}")


def _outcomes(path: Path) -> dict[str, str]:
    path = path / "results.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise SelectorError(f"results {path} do not exist", hint="pass a run directory with results.jsonl")
    outcomes: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SelectorError(f"{path}:{number}: not a JSON record: {exc.msg}") from None
        if record.get("flaky") or int(record.get("attempts") or 1) > 1:
            continue  # a flake is not a transition
        outcomes[record.get("id") or record["test_id"]] = str(record.get("outcome"))
    return outcomes
