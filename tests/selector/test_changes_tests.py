"""Stage 1 on test files: added, removed, modified, renamed, moved; formatting-only ignored."""
from __future__ import annotations

from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

F = "test/test_foo.py"

BEFORE = device_test_file('''
class TestFoo(TestCase):
    @dtypes(torch.float32)
    def test_same(self, device, dtype):
        self.assertEqual(1, 1)

    def test_body(self, device):
        self.assertEqual(2, 2)

    def test_gone(self, device):
        self.assertEqual(3, 3)

    def test_old_name(self, device):
        x = torch.ones(4, device=device)
        self.assertEqual(x.sum().item(), 4)

    def test_wanders(self, device):
        self.assertTrue(torch.zeros(1, device=device).eq(0).all())

    def test_pretty(self, device):
        self.assertEqual(torch.tensor([1, 2], device=device).sum().item(), 3)

    def test_documented(self, device):
        """Old words."""
        self.assertEqual(5, 5)  # old comment


class TestBar(TestCase):
    def test_bar(self, device):
        pass
''', tail="instantiate_device_type_tests(TestFoo, globals())\ninstantiate_device_type_tests(TestBar, globals())\n")

AFTER = BEFORE.replace("self.assertEqual(2, 2)", "self.assertEqual(2, len([1, 1]))") \
    .replace('''    def test_gone(self, device):
        self.assertEqual(3, 3)

''', "") \
    .replace("def test_old_name(", "def test_new_name(") \
    .replace('''    def test_wanders(self, device):
        self.assertTrue(torch.zeros(1, device=device).eq(0).all())

''', "") \
    .replace('''    def test_bar(self, device):
        pass
''', '''    def test_bar(self, device):
        pass

    def test_wanders(self, device):
        self.assertTrue(torch.zeros(1, device=device).eq(0).all())

    @dtypes(torch.float16)
    def test_fresh(self, device, dtype):
        pass
''') \
    .replace("self.assertEqual(torch.tensor([1, 2], device=device).sum().item(), 3)",
             "self.assertEqual(\n            torch.tensor([1, 2], device=device).sum().item(),\n            3,\n        )") \
    .replace('"""Old words."""', '"""New words, same test."""').replace("# old comment", "# new comment")


def test_every_function_level_change_kind(tmp_path):
    report = run_stage1(tmp_path, {F: BEFORE}, {F: AFTER})
    assert changes_of(report) == {
        f"{F}::TestFoo::test_body": "modified",
        f"{F}::TestFoo::test_new_name": "renamed",
        f"{F}::TestBar::test_wanders": "moved",
        f"{F}::TestBar::test_fresh": "added",
    }
    assert [r.test_id for r in report.removed] == [f"{F}::TestFoo::test_gone"]
    assert [i.test_id for i in report.ignored] == [f"{F}::TestFoo::test_documented", f"{F}::TestFoo::test_pretty"]
    details = {c.test_id: c.reasons[0].detail for c in report.candidates}
    assert details[f"{F}::TestFoo::test_new_name"] == f"renamed from {F}::TestFoo::test_old_name"
    assert details[f"{F}::TestBar::test_wanders"] == f"moved from {F}::TestFoo::test_wanders"


def test_every_candidate_carries_file_and_hunk(tmp_path):
    report = run_stage1(tmp_path, {F: BEFORE}, {F: AFTER})
    for candidate in report.candidates:
        (evidence,) = candidate.reasons
        assert evidence.file == F
        assert evidence.hunk.startswith("@@ -") and evidence.line > 0
    body = report.candidate(f"{F}::TestFoo::test_body").reasons[0]
    lines = AFTER.splitlines()
    assert "def test_body" in lines[body.line - 1] and "len([1, 1])" in lines[body.line]


def test_formatting_only_change_selects_nothing(tmp_path):
    reformatted = BEFORE.replace("    def test_body(self, device):\n        self.assertEqual(2, 2)",
                                 "    def test_body(self,\n                  device):\n        self.assertEqual(2,   2)  # same")
    report = run_stage1(tmp_path, {F: BEFORE}, {F: reformatted})
    assert report.candidates == []
    assert [i.reason for i in report.ignored] == ["formatting-, comment- or docstring-only change"]


def test_file_rename_moves_its_tests_and_deletion_removes_them(tmp_path):
    other = device_test_file("class TestOther(TestCase):\n    def test_x(self, device):\n        pass\n")
    report = run_stage1(tmp_path, {F: BEFORE, "test/test_other.py": other}, {"test/test_other.py": None},
                        moves={F: "test/test_renamed.py"})
    changes = changes_of(report)
    assert changes["test/test_renamed.py::TestFoo::test_body"] == "moved"
    assert len(changes) == 8 and set(changes.values()) == {"moved"}
    assert [r.test_id for r in report.removed] == ["test/test_other.py::TestOther::test_x"]
    assert report.removed[0].reason == "file deleted"
    renamed = next(f for f in report.files if f.path == "test/test_renamed.py")
    assert (renamed.status, renamed.old_path, renamed.kind) == ("renamed", F, "test_file")


def test_changed_ops_list_constant_modifies_the_op_test(tmp_path):
    source = device_test_file('''NAMES = ("add",)


class TestOps(TestCase):
    @ops([op for op in op_db if op.name in NAMES])
    def test_op(self, device, dtype, op):
        pass
''')
    report = run_stage1(tmp_path, {F: source}, {F: source.replace('("add",)', '("add", "mul")')})
    assert changes_of(report) == {f"{F}::TestOps::test_op": "modified"}


OP_LIST = device_test_file('''NAMES = ("add",)
UNRELATED = 1


class TestOps(TestCase):
    @ops([op for op in op_db if op.name in NAMES])
    def test_through_list(self, device, dtype, op):
        pass

    @ops([op for op in op_db if op.name in ("add", "div")], dtypes=OpDTypes.supported)
    def test_inline(self, device, dtype, op):
        pass

    @ops([op for op in op_db if op.name in NAMES])
    def test_reads_list_in_body(self, device, dtype, op):
        self.assertIn(op.name, NAMES)
''')


def test_adding_one_op_to_an_op_list_selects_only_that_ops_variants(tmp_path):
    after = OP_LIST.replace('NAMES = ("add",)', 'NAMES = ("add", "mul")') \
        .replace('("add", "div")], dtypes', '("add", "div", "sub")], dtypes')
    report = run_stage1(tmp_path, {F: OP_LIST}, {F: after})
    assert {c.test_id: (c.change, c.ops) for c in report.candidates} == {
        f"{F}::TestOps::test_through_list": ("modified", ["mul"]),
        f"{F}::TestOps::test_inline": ("modified", ["sub"]),
        f"{F}::TestOps::test_reads_list_in_body": ("modified", [])}  # its body reads NAMES: every variant
    (through,) = report.candidate(f"{F}::TestOps::test_through_list").reasons
    names = after.splitlines().index('NAMES = ("add", "mul")') + 1
    assert (through.detail, through.hunk) == ("op mul added to its @ops list (through NAMES)",
                                              f"@@ -{names},1 +{names},1 @@")
    (inline,) = report.candidate(f"{F}::TestOps::test_inline").reasons
    line = after.splitlines().index('    @ops([op for op in op_db if op.name in ("add", "div", "sub")], '
                                    'dtypes=OpDTypes.supported)') + 1
    assert (inline.detail, inline.hunk) == ("op sub added to its @ops list", f"@@ -{line},1 +{line},1 @@")


def test_removing_an_op_from_a_list_removes_its_variants_and_other_edits_still_modify(tmp_path):
    after = OP_LIST.replace('("add", "div")], dtypes', '("add",)], dtypes')
    report = run_stage1(tmp_path, {F: OP_LIST}, {F: after})
    assert report.candidates == []
    assert [(r.test_id, r.op) for r in report.removed] == [(f"{F}::TestOps::test_inline", "div")]
    changed_too = OP_LIST.replace('("add", "div")], dtypes=OpDTypes.supported', '("add", "div", "sub")]')
    report = run_stage1(tmp_path / "more", {F: OP_LIST}, {F: changed_too})
    assert {c.test_id: c.ops for c in report.candidates} == {f"{F}::TestOps::test_inline": []}  # the dtypes went too


def test_decorator_and_class_level_edits_cite_their_own_hunk(tmp_path):
    source = device_test_file('''
class TestCite(TestCase):
    limit = 3

    def test_first(self, device):
        pass

    @dtypes(torch.float32)
    def test_decorated(self, device, dtype):
        pass


instantiate_device_type_tests(TestCite, globals())
''')
    lines = source.splitlines()
    after = "# an earlier hunk\n" + source.replace("@dtypes(torch.float32)", "@dtypes(torch.float16)")
    report = run_stage1(tmp_path, {F: source}, {F: after})
    decorator = lines.index("    @dtypes(torch.float32)") + 1
    assert report.candidate(f"{F}::TestCite::test_decorated").reasons[0].hunk == \
        f"@@ -{decorator},1 +{decorator + 1},1 @@"
    after = "# an earlier hunk\n" + source.replace("limit = 3", "limit = 4")
    report = run_stage1(tmp_path / "attr", {F: source}, {F: after})
    attribute = lines.index("    limit = 3") + 1
    assert {r.hunk for c in report.candidates for r in c.reasons} == {f"@@ -{attribute},1 +{attribute + 1},1 @@"}
    after = "# an earlier hunk\n" + source.replace("globals())", "globals(), except_for='cuda')")
    report = run_stage1(tmp_path / "inst", {F: source}, {F: after})
    call = lines.index("instantiate_device_type_tests(TestCite, globals())") + 1
    assert {r.hunk for c in report.candidates for r in c.reasons} == {f"@@ -{call},1 +{call + 1},1 @@"}
