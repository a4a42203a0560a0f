"""Stage 1 on OpInfo definitions, native_functions.yaml, derivatives.yaml and relevance rules."""
from __future__ import annotations

import textwrap

from testdefs.loader import load_rules
from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

OPI = "torch/testing/_internal/common_methods_invocations.py"
DEFS = "torch/testing/_internal/opinfo/definitions/special.py"
T = "test/test_ops.py"

OPINFO = '''\
def sample_inputs_add(op_info, device, dtype, requires_grad, **kwargs):
    yield SampleInput(make_tensor((2,), device=device, dtype=dtype))


def sample_inputs_mul(op_info, device, dtype, requires_grad, **kwargs):
    yield SampleInput(make_tensor((3,), device=device, dtype=dtype))


op_db = [
    BinaryUfuncInfo("add", sample_inputs_func=sample_inputs_add),
    BinaryUfuncInfo("mul", sample_inputs_func=sample_inputs_mul),
    UnaryUfuncInfo("neg"),
    OpInfo("div", variant_test_name="floor_rounding", supports_out=True),
    OpInfo("sub"),
]
'''

TESTS = device_test_file('''
class TestOps(TestCase):
    @ops(op_db, allowed_dtypes=(torch.float32,))
    def test_every_op(self, device, dtype, op):
        pass

    @ops([op for op in op_db if op.name in ("add", "div")])
    def test_some_ops(self, device, dtype, op):
        pass

    @ops(unary_ufuncs)
    def test_unary(self, device, dtype, op):
        pass

    def test_not_op(self, device):
        pass
''')

NATIVE = '''\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method

- func: neg(Tensor self) -> Tensor
  variants: function, method
'''


def test_opinfo_entries_added_removed_modified_map_to_their_op_tests(tmp_path):
    after = OPINFO.replace("supports_out=True", "supports_out=False") \
        .replace("make_tensor((3,)", "make_tensor((4,)") \
        .replace('    OpInfo("sub"),\n', '    UnaryUfuncInfo("abs"),\n')
    report = run_stage1(tmp_path, {OPI: OPINFO, T: TESTS}, {OPI: after})
    ops_of = {c.test_id: c.ops for c in report.candidates}
    assert ops_of == {
        f"{T}::TestOps::test_every_op": ["abs", "div.floor_rounding", "mul"],
        f"{T}::TestOps::test_some_ops": ["div.floor_rounding"],
        f"{T}::TestOps::test_unary": ["abs"],
    }
    assert set(changes_of(report).values()) == {"opinfo"}
    assert [(r.test_id, r.op) for r in report.removed] == [(f"{T}::TestOps::test_every_op", "sub")]
    (opinfo_file,) = [f for f in report.files if f.kind == "opinfo"]
    assert opinfo_file.details == ["OpInfo entry abs added", "OpInfo entry div.floor_rounding modified",
                                   "OpInfo entry mul modified", "OpInfo entry sub removed"]
    mul = next(e for e in report.candidate(f"{T}::TestOps::test_every_op").reasons if e.op == "mul")
    assert mul.file == OPI and mul.hunk == "@@ -6,1 +6,1 @@"
    assert mul.detail == "OpInfo entry mul modified through sample_inputs_mul"
    div = next(e for e in report.candidate(f"{T}::TestOps::test_every_op").reasons if e.op == "div.floor_rounding")
    assert div.hunk == "@@ -13,2 +13,2 @@" and div.line == 13  # div and the sub->abs line next to it


def test_reformatted_opinfo_entry_is_not_a_change(tmp_path):
    after = OPINFO.replace('    UnaryUfuncInfo("neg"),', '    UnaryUfuncInfo(\n        "neg",  # unary\n    ),')
    report = run_stage1(tmp_path, {DEFS: OPINFO, T: TESTS}, {DEFS: after})
    assert report.candidates == [] and report.files[0].kind == "opinfo"


def test_native_functions_change_maps_ops_to_op_tests(tmp_path):
    after = NATIVE.replace("neg(Tensor self) -> Tensor\n  variants: function, method",
                           "neg(Tensor self) -> Tensor\n  variants: function, method\n  tags: pointwise")
    report = run_stage1(tmp_path, {"aten/src/ATen/native/native_functions.yaml": NATIVE, T: TESTS},
                        {"aten/src/ATen/native/native_functions.yaml": after})
    assert {c.test_id: (c.change, c.ops) for c in report.candidates} == {
        f"{T}::TestOps::test_every_op": ("source", ["neg"])}
    assert report.files[0].details == ["neg modified"]
    assert report.candidates[0].reasons[0].hunk == "@@ -5,0 +6,1 @@"  # git: inserted after old line 5


def test_broken_yaml_is_reported_and_analysis_goes_on(tmp_path):
    report = run_stage1(tmp_path, {"tools/autograd/derivatives.yaml": "- name: a\n", T: TESTS},
                        {"tools/autograd/derivatives.yaml": "- name: [unclosed\n"})
    assert report.candidates == []
    assert report.errors and report.errors[0].startswith("tools/autograd/derivatives.yaml: YAML error: line")


def test_relevance_rules_map_sources_to_tests_and_ops(tmp_path):
    rules_file = tmp_path / "rules" / "demo.yaml"
    rules_file.parent.mkdir()
    rules_file.write_text(textwrap.dedent('''\
        version: 1
        relevance:
          rules:
            - sources: ["aten/src/ATen/native/BinaryOps.cpp"]
              tests: ["test/test_ops.py::TestOps::test_not_op"]
              ops: [add]
            - sources: ["torch/nn/*"]
              tests: [test/test_nn.py]
          always_run:
            - test/test_ops.py::TestOps::test_unary
        '''))
    rules = load_rules(rules_file)
    report = run_stage1(tmp_path, {T: TESTS, "aten/src/ATen/native/BinaryOps.cpp": "// a\n", "docs/x.md": "a\n"},
                        {"aten/src/ATen/native/BinaryOps.cpp": "// b\n", "docs/x.md": "b\n"}, rules=rules)
    assert {c.test_id: (c.change, c.ops) for c in report.candidates} == {
        f"{T}::TestOps::test_not_op": ("source", []),
        f"{T}::TestOps::test_every_op": ("source", ["add"]),
        f"{T}::TestOps::test_some_ops": ("source", ["add"]),
        f"{T}::TestOps::test_unary": ("always", []),
    }
    evidence = report.candidate(f"{T}::TestOps::test_not_op").reasons[0]
    assert evidence.rule.endswith("demo.yaml:4") and evidence.hunk == "@@ -1,1 +1,1 @@"
    assert evidence.file == "aten/src/ATen/native/BinaryOps.cpp"


def test_foreach_entries_are_kept_apart_from_the_op_of_the_same_name():
    from selector.changes.opinfo import diff_entries, scan_opinfo, test_covers_op

    before = "op_db = [OpInfo('add', dtypes=(1,)), ForeachFuncInfo('add', dtypes=(1,))]\n"
    after = before.replace("ForeachFuncInfo('add', dtypes=(1,))", "ForeachFuncInfo('add', dtypes=(2,))")
    diff = diff_entries(scan_opinfo("m.py", before), scan_opinfo("m.py", after))
    (entry,) = diff["modified"]
    assert (entry.label, entry.info_class) == ("_foreach_add", "ForeachFuncInfo")
    assert not test_covers_op(["*"], entry.name, entry.info_class)  # @ops(op_db) never sees foreach entries
    assert not test_covers_op(["add"], entry.name, entry.info_class)
    assert test_covers_op(["@foreach_binary_op_db"], entry.name, entry.info_class)


def test_variants_generated_by_a_loop_get_their_own_names():
    from selector.changes.opinfo import diff_entries, scan_opinfo

    before = ("op_db = [UnaryUfuncInfo('polygamma', variant_test_name='polygamma_n_0'),\n"
              "    *(UnaryUfuncInfo('polygamma', variant_test_name=f'polygamma_n_{n_}', kw=n_) for n_ in (1, 2, 3, 4))]\n")
    scanned = scan_opinfo("m.py", before)
    assert sorted(scanned.entries) == [f"polygamma.polygamma_n_{n}" for n in range(5)]
    after = before.replace("(1, 2, 3, 4)", "(1, 2, 3, 4, 5)")
    diff = diff_entries(scanned, scan_opinfo("m.py", after))
    assert [e.label for e in diff["added"]] == ["polygamma.polygamma_n_5"] and diff["modified"] == []


def test_an_entry_changed_through_a_caller_cites_the_edited_function(tmp_path):
    base = OPINFO.replace('BinaryUfuncInfo("add", sample_inputs_func=sample_inputs_add)',
                          'BinaryUfuncInfo("add", sample_inputs_func=reference_inputs_add)') + \
        "\n\ndef reference_inputs_add(op_info, device, dtype, requires_grad, **kwargs):\n" \
        "    yield from sample_inputs_add(op_info, device, dtype, requires_grad)\n"
    after = "# a first hunk elsewhere\n" + base.replace("make_tensor((2,)", "make_tensor((5,)")  # edits sample_inputs_add
    report = run_stage1(tmp_path, {OPI: base, T: TESTS}, {OPI: after})
    reason = report.candidate(f"{T}::TestOps::test_every_op").reasons[0]
    assert reason.detail == "OpInfo entry add modified through sample_inputs_add, reference_inputs_add"
    assert reason.hunk == "@@ -2,1 +3,1 @@"  # the edited line, not the unedited caller (nor the file's first hunk)
