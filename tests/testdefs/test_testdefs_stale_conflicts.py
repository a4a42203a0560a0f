"""Stale entries (rules naming nothing collected) and conflicting or duplicate entries."""
from __future__ import annotations

from testdefs import load_rules
from tests.testdefs.testdefs_helpers import write

RULES = """
files:
  - path: test/test_a.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: [TestA::test_present, TestA::test_renamed_upstream]
        mode: skip
        reason: {category: crash, text: x}
      - match: "TestA::test_glob_*"
        mode: xfail
        reason: {category: flaky, text: x}
      - match: TestA::test_present
        mode: xfail
        dtypes: {include: [bfloat16]}
        reason: {category: numerics, text: "no bfloat16 variant exists"}
      - match: TestA::test_new_in_214
        mode: xfail
        when: {torch: ">=2.14"}
        reason: {category: upstream_bug, text: x}
      - match: TestOps::test_dtypes
        mode: xfail
        ops: {include: [add]}
        reason: {category: unsupported_op, text: x}
  - path: test/test_gone.py
    unlisted_test_mode: skip
"""

COLLECTED = [
    "test/test_a.py::TestAPRIVATEUSE1::test_present_spyre_float32",
    "test/test_a.py::TestASPYRE::test_present_spyre_int64",
    "test/test_a.py::TestOpsSPYRE::test_dtypes_add_spyre_float32",
    "test/test_b.py::TestBSPYRE::test_other_spyre",
]


def test_stale_patterns_files_and_filters(tmp_path):
    rules = load_rules(write(tmp_path / "r.yaml", RULES))
    stale = rules.stale(COLLECTED)
    found = {(s.kind, s.subject, s.ref.rsplit(":", 1)[1]) for s in stale}
    assert found == {
        ("pattern", "TestA::test_renamed_upstream", "5"),
        ("pattern", "TestA::test_glob_*", "8"),
        ("filters", "TestA::test_present", "11"),
        ("pattern", "TestA::test_new_in_214", "15"),
        ("file", "test/test_gone.py", "23"),
    }
    assert all(str(s).startswith(s.ref) for s in stale)


def test_stale_respects_the_version_and_known_ops(tmp_path):
    rules = load_rules(write(tmp_path / "r.yaml", RULES))
    subjects = {s.subject for s in rules.stale(COLLECTED, torch_version="2.13")}
    assert "TestA::test_new_in_214" not in subjects  # not active on 2.13: not checked
    with_ops = [(COLLECTED[2], "add")]
    assert "TestOps::test_dtypes" not in {s.subject for s in rules.stale(with_ops)}
    # the test exists for mul only: the name matches, the op filter excludes every variant
    wrong_op = [("test/test_a.py::TestOpsSPYRE::test_dtypes_mul_spyre_float32", "mul")]
    assert ("filters", "TestOps::test_dtypes") in {(s.kind, s.subject) for s in rules.stale(wrong_op)}


def test_nothing_stale_when_every_rule_names_a_test(tmp_path):
    rules = load_rules(write(tmp_path / "r.yaml", """
        files:
          - path: test/test_a.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestA::test_present, mode: skip, reason: {category: crash, text: x}}
        """))
    assert rules.stale(COLLECTED) == []


def test_static_conflicts_duplicates_and_unlisted_mode_clash(tmp_path):
    write(tmp_path / "a.yaml", """
        files:
          - path: test/test_a.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestA::test_x, mode: skip, reason: {category: crash, text: a}}
              - {match: TestA::test_x_spyre, mode: xfail, reason: {category: flaky, text: b}}
              - {match: TestA::test_y, mode: skip, reason: {category: crash, text: c}}
              - {match: TestAPRIVATEUSE1::test_y, mode: skip, reason: {category: crash, text: d}}
              - {match: TestA::test_z, mode: skip, reason: {category: crash, text: e}}
              - {match: TestA::test_z, mode: xfail, dtypes: {include: [int64]}, reason: {category: flaky, text: f}}
        """)
    write(tmp_path / "b.yaml", """
        files:
          - path: test/test_a.py
            unlisted_test_mode: xfail
        """)
    conflicts = load_rules(tmp_path).conflicts()
    summary = sorted((c.kind, c.subject, c.modes) for c in conflicts)
    assert summary == [
        ("conflict", "TestA::test_x", ("skip", "xfail")),  # the device suffix is normalised away
        ("conflict", "unlisted_test_mode of test/test_a.py", ("mandatory_success", "xfail")),
        ("duplicate", "TestA::test_y", ("skip", "skip")),  # class suffix drift is the same test
    ]
    [x] = [c for c in conflicts if c.subject == "TestA::test_x"]
    assert [ref.rsplit(":", 1)[1] for ref in x.refs] == ["5", "6"]
    assert str(x).startswith(x.refs[0] + ": conflict: TestA::test_x gets different modes")


def test_conflicts_found_through_collected_ids(tmp_path):
    rules = load_rules(write(tmp_path / "r.yaml", """
        files:
          - path: test/test_a.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: "TestA::test_*", mode: skip, reason: {category: crash, text: a}}
              - {match: "re:TestA::test_p.*", mode: xfail, reason: {category: flaky, text: b}}
              - {match: "TestA::test_present", mode: mandatory_success}
        """))
    assert rules.conflicts() == []  # different patterns: only collected ids reveal the overlap
    conflicts = rules.conflicts(["test/test_a.py::TestASPYRE::test_presence_spyre",
                                 "test/test_a.py::TestASPYRE::test_present_spyre"])
    assert [(c.subject, c.modes) for c in conflicts] == [("test/test_a.py::TestA::test_presence", ("skip", "xfail"))]
    # the tie is broken by file order, and the exact entry beats both globs
    assert rules.decide("test/test_a.py::TestASPYRE::test_presence_spyre").mode == "skip"
    assert rules.decide("test/test_a.py::TestASPYRE::test_present_spyre").mode == "mandatory_success"
