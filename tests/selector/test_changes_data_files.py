"""Stage 1: a test file that reads a changed data file by its path (no import to follow)."""
from __future__ import annotations

from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

T = "test/test_declared.py"
YAML = "aten/src/ATen/native/native_functions.yaml"
NOTES = "tools/notes.txt"
DECLARED = "- func: add(Tensor self, Tensor other) -> Tensor\n  variants: function\n"

READER = device_test_file('''
from pathlib import Path

import yaml
from torch.testing._internal.common_utils import parametrize

TREE = Path(__file__).resolve().parents[1]
OPS = [e["func"].split("(")[0] for e in yaml.safe_load((TREE / "aten/src/ATen/native/native_functions.yaml").read_text())]
OP_COUNT = len(OPS)


def _notes():
    return (TREE / "tools/notes.txt").read_text()


class TestDeclared(TestCase):
    @parametrize("op_name", OPS)
    def test_declared(self, device, op_name):
        pass

    def test_count(self, device):
        self.assertGreater(OP_COUNT, 0)

    def test_notes(self, device):
        self.assertTrue(_notes())

    def test_alone(self, device):
        pass
''', tail="instantiate_device_type_tests(TestDeclared, globals())\n")


def test_a_changed_data_file_selects_the_tests_reading_it_by_path(tmp_path):
    before = {T: READER, YAML: DECLARED, NOTES: "a\n"}
    added = DECLARED + "\n- func: digamma(Tensor self) -> Tensor\n  variants: function\n"
    report = run_stage1(tmp_path / "yaml", before, {YAML: added})
    assert set(changes_of(report)) == {f"{T}::TestDeclared::test_declared", f"{T}::TestDeclared::test_count"}
    reasons = {c.test_id: c.reasons[-1] for c in report.candidates}
    assert reasons[f"{T}::TestDeclared::test_declared"].detail == \
        f"reads OPS, which comes from changed {YAML} (read by its path)"
    assert reasons[f"{T}::TestDeclared::test_count"].file == YAML
    # the reason names the op whose entry changed (stage 4 runs its variant first); the test stays whole
    assert reasons[f"{T}::TestDeclared::test_declared"].op == "digamma"
    assert report.candidate(f"{T}::TestDeclared::test_declared").ops == []

    report = run_stage1(tmp_path / "txt", before, {NOTES: "b\n"})  # through a helper of the file
    assert set(changes_of(report)) == {f"{T}::TestDeclared::test_notes"}


def test_a_comment_in_a_data_file_or_an_unnamed_data_file_selects_nothing(tmp_path):
    before = {T: READER, YAML: DECLARED, "tools/other.yaml": "a: 1\n"}
    report = run_stage1(tmp_path / "comment", before, {YAML: "# the demo subset\n" + DECLARED})
    assert changes_of(report) == {}
    report = run_stage1(tmp_path / "other", before, {"tools/other.yaml": "a: 2\n"})
    assert changes_of(report) == {}


def test_a_path_outside_any_definition_selects_the_whole_file_conservatively(tmp_path):
    body = READER.replace("class TestDeclared(TestCase):\n",
                          "class TestDeclared(TestCase):\n    source = 'tools/notes.txt'\n\n")
    report = run_stage1(tmp_path, {T: body, YAML: DECLARED, NOTES: "a\n"}, {NOTES: "b\n"})
    assert len(changes_of(report)) == 4
    assert all("selected conservatively" in c.reasons[0].detail for c in report.candidates)


def test_a_comment_naming_a_file_or_a_cpp_source_reads_nothing(tmp_path):
    commented = device_test_file('''
class TestNotes(TestCase):
    def test_one(self, device):
        # NB: see tools/notes.txt and test/cpp/api/autograd.cpp for more
        x = "test/cpp/api/autograd.cpp"
''', tail="instantiate_device_type_tests(TestNotes, globals())\n")
    before = {T: commented, NOTES: "a\n", "test/cpp/api/autograd.cpp": "// a\n"}
    report = run_stage1(tmp_path, before, {NOTES: "b\n", "test/cpp/api/autograd.cpp": "// b\n"})
    assert changes_of(report) == {}  # C++ is compiled, not read; a comment reads nothing
