"""Stage 1 outside the test tree: a changed reference, decomposition, Python implementation or YAML
entry selects the tests of its op (its OpInfo variants and the tests that name it), nothing else."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

OPI = "torch/testing/_internal/common_methods_invocations.py"
OPS = "test/test_ops.py"
NN = "test/test_nn.py"
DECOMP = "torch/_decomp/decompositions.py"
FUNCTIONAL = "torch/nn/functional.py"
REFS = "torch/_refs/__init__.py"
NATIVE = "aten/src/ATen/native/native_functions.yaml"

OPINFO = '''\
op_db = [
    OpInfo("softmax", aliases=("special.softmax", "nn.functional.softmax"), variant_test_name="with_dtype"),
    OpInfo("nn.functional.gelu"),
    BinaryUfuncInfo("add"),
    UnaryUfuncInfo("neg"),
]
python_ref_db = [
    PythonRefInfo("_refs.softmax", torch_opinfo_name="softmax"),
    PythonRefInfo("_refs.neg", torch_opinfo_name="neg"),
]
'''

TESTS = device_test_file('''
class TestCommon(TestCase):
    @ops(op_db, allowed_dtypes=(torch.float32,))
    def test_every_op(self, device, dtype, op):
        pass

    @ops([op for op in op_db if op.name in ("add", "neg")])
    def test_two_ops(self, device, dtype, op):
        pass

    @ops(python_ref_db)
    def test_python_ref(self, device, dtype, op):
        pass
''', extra_imports="from torch.testing._internal.common_methods_invocations import python_ref_db")

NN_TESTS = device_test_file('''
import torch.nn.functional as F


class TestNN(TestCase):
    def _check_softmax(self, device):
        return F.softmax(torch.ones(2, device=device), 0)

    def test_softmax_module(self, device):
        F.softmax(torch.ones(2, device=device), 0)

    def test_softmax_through_helper(self, device):
        self._check_softmax(device)

    def test_gelu(self, device):
        F.gelu(torch.ones(2, device=device))

    def test_relu(self, device):
        F.relu(torch.ones(2, device=device))
''')

BASE = {OPI: OPINFO, OPS: TESTS, NN: NN_TESTS}
SOFTMAX = {f"{OPS}::TestCommon::test_every_op": ["softmax.with_dtype"],
           f"{OPS}::TestCommon::test_python_ref": ["_refs.softmax"],
           f"{NN}::TestNN::test_softmax_module": [], f"{NN}::TestNN::test_softmax_through_helper": []}


def _installed(path: str) -> str:
    """A real source file of the installed torch 2.13 (read as text, never imported)."""
    root = Path(importlib.util.find_spec("torch").origin).parent
    return (root / path.removeprefix("torch/")).read_text()


def _selected(report) -> dict[str, list[str]]:
    return {c.test_id: c.ops for c in report.candidates}


def test_a_changed_decomposition_selects_the_tests_of_its_op(tmp_path):
    real = _installed(DECOMP)
    marker = "@register_decomposition(aten._softmax)\n@out_wrapper()\ndef _softmax("
    assert marker in real
    start = real.index(marker)
    body_line = real.index("\n", real.index("):", start)) + 1  # first body line of the real _softmax
    after = real[:body_line] + "    x = x.contiguous()\n" + real[body_line:]
    report = run_stage1(tmp_path, {**BASE, DECOMP: real}, {DECOMP: after})
    assert _selected(report) == SOFTMAX
    assert {c.change for c in report.candidates} == {"source"}
    (change,) = report.files
    assert change.kind == "op_source" and change.details == ["decomposition `_softmax` of _softmax changed"]
    reason = report.candidate(f"{OPS}::TestCommon::test_every_op").reasons[0]
    line = real[:body_line].count("\n") + 1
    assert (reason.file, reason.op, reason.hunk) == (DECOMP, "softmax.with_dtype", f"@@ -{line - 1},0 +{line},1 @@")
    named = report.candidate(f"{NN}::TestNN::test_softmax_module").reasons[0]
    assert named.detail.endswith("the test names softmax") and named.hunk == reason.hunk


def test_a_decomposition_helper_change_reaches_the_ops_that_call_it(tmp_path):
    real = _installed(DECOMP)
    helper = "def _softmax_unbacked_safe_amax(x: Tensor, dim: int) -> Tensor:\n"
    assert helper in real and "_softmax_unbacked_safe_amax(" in real[real.index("def _softmax("):real.index(helper)]
    after = real.replace(helper, helper + "    dim = int(dim)\n")
    report = run_stage1(tmp_path, {**BASE, DECOMP: real}, {DECOMP: after})
    assert _selected(report) == SOFTMAX  # _softmax calls the helper; nothing else in this tree does
    reason = report.candidate(f"{NN}::TestNN::test_softmax_module").reasons[0]
    assert "through changed _softmax_unbacked_safe_amax" in reason.detail
    assert reason.line == real[:real.index(helper)].count("\n") + 1  # the helper's hunk, not _softmax's


def test_a_changed_python_implementation_selects_by_namespace_and_alias(tmp_path):
    real = _installed(FUNCTIONAL)
    start = real.index("\ndef softmax(\n")
    end = real.index("\n    return ret\n", start)
    commented = real[:end] + "\n    # a comment only" + real[end:]
    report = run_stage1(tmp_path, {**BASE, FUNCTIONAL: real}, {FUNCTIONAL: commented})
    assert report.candidates == []  # the definition's fingerprint is unchanged
    after = real[:end] + "\n    ret = ret.clone()" + real[end:]
    report = run_stage1(tmp_path / "softmax", {**BASE, FUNCTIONAL: real}, {FUNCTIONAL: after})
    assert _selected(report) == SOFTMAX  # nn.functional.softmax is an alias of the softmax entry
    details = report.files[0].details
    assert "Python implementation `softmax` of nn.functional.softmax, softmax changed" in details
    assert "Python implementation `multi_head_attention_forward` of multi_head_attention_forward, " \
           "nn.functional.multi_head_attention_forward changed through changed softmax" in details  # it calls F.softmax


def test_a_changed_reference_reaches_the_python_reference_entry_too(tmp_path):
    real = _installed(REFS)
    marker = "\ndef neg(a):\n"
    assert marker in real
    after = real.replace(marker, marker + "    a = a + 0\n")
    report = run_stage1(tmp_path, {**BASE, REFS: real}, {REFS: after})
    assert _selected(report) == {f"{OPS}::TestCommon::test_every_op": ["neg"],
                                 f"{OPS}::TestCommon::test_two_ops": ["neg"],
                                 f"{OPS}::TestCommon::test_python_ref": ["_refs.neg"]}
    assert report.candidate(f"{OPS}::TestCommon::test_python_ref").reasons[0].detail == \
        "Python reference `neg` of neg changed"


def test_a_native_functions_entry_selects_its_op_and_the_tests_naming_it(tmp_path):
    native = "- func: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor\n" \
             "  structured_delegate: _softmax.out\n\n- func: neg(Tensor self) -> Tensor\n  variants: function, method\n"
    after = native.replace("structured_delegate: _softmax.out", "dispatch:\n    CPU: softmax_cpu")
    report = run_stage1(tmp_path, {**BASE, NATIVE: native}, {NATIVE: after})
    assert _selected(report) == SOFTMAX
    reason = report.candidate(f"{OPS}::TestCommon::test_every_op").reasons[0]
    assert reason.detail == "native_functions.yaml entry _softmax modified (op _softmax)" and reason.hunk.startswith("@@ -2,")


def test_an_unrelated_definition_selects_nothing(tmp_path):
    real = _installed(DECOMP)
    after = real + "\n\ndef _private_unused_helper(x):\n    return x\n"
    report = run_stage1(tmp_path, {**BASE, DECOMP: real}, {DECOMP: after})
    assert report.candidates == []


def test_a_cuda_only_dispatch_edit_selects_nothing_and_builtin_names_need_torch(tmp_path):
    native = "- func: max(Tensor self) -> Tensor\n  dispatch:\n    CPU, CUDA: max\n"
    tests = ("import torch\n\n\ndef test_builtin_max():\n    assert max(1, 2) == 2\n\n\n"
             "def test_torch_max():\n    assert torch.max(torch.ones(2)) == 1\n")
    before = {**BASE, NATIVE: native, "test/test_max.py": tests}
    report = run_stage1(tmp_path, before, {NATIVE: native.replace("CPU, CUDA: max", "CPU: max\n    CUDA: max_cuda")})
    assert report.candidates == [] and report.files[0].details == []  # spyre runs neither CUDA kernel
    report = run_stage1(tmp_path / "cpu", before, {NATIVE: native.replace("CPU, CUDA: max", "CPU, CUDA: max_v2")})
    assert _selected(report) == {"test/test_max.py::test_torch_max": []}  # max(1, 2) is Python's, not the op


def test_a_yaml_reason_cites_the_hunk_inside_its_own_entry(tmp_path):
    native = ("- func: neg(Tensor self) -> Tensor\n  variants: function, method\n\n"
              "- func: add.Tensor(Tensor self, Tensor other) -> Tensor\n  variants: function\n  dispatch:\n"
              "    CPU: add_cpu\n")
    after = native.replace("variants: function, method", "variants: function") \
        .replace("CPU: add_cpu", "CPU: add_cpu_v2")  # two hunks: line 2 (neg), line 7 (add)
    report = run_stage1(tmp_path, {**BASE, NATIVE: native}, {NATIVE: after})
    add = [r for c in report.candidates for r in c.reasons if r.op == "add"]
    neg = [r for c in report.candidates for r in c.reasons if r.op == "neg"]
    assert add and {r.hunk for r in add} == {"@@ -7,1 +7,1 @@"}  # not the file's first hunk
    assert neg and {r.hunk for r in neg} == {"@@ -2,1 +2,1 @@"}


def test_the_explanation_names_each_ops_own_hunk():
    from selector.model import Candidate, Evidence
    from selector.stages.diff import candidate_reason

    reasons = [Evidence(file=OPI, hunk=f"@@ -{n},1 +{n},1 @@", op=op, detail=f"OpInfo entry {op} modified")
               for n, op in ((3, "add"), (9, "mul"), (9, "mul"), (12, "neg"), (20, "sub"), (30, "div"))]
    candidate = Candidate(test_id=f"{OPS}::TestCommon::test_every_op", file=OPS, name="test_every_op",
                          change="opinfo", ops=["add", "div", "mul", "neg", "sub"], reasons=reasons)
    assert candidate_reason(candidate) == (
        f"Selected: an OpInfo entry it is parametrized over changed [op add]: {OPI} @@ -3,1 +3,1 @@ "
        f"(OpInfo entry add modified). Other ops, each by its own hunk: mul: {OPI} @@ -9,1 +9,1 @@; "
        f"neg: {OPI} @@ -12,1 +12,1 @@; sub: {OPI} @@ -20,1 +20,1 @@; and 1 more ops.")


def test_a_new_decomposition_module_and_another_refs_module_select_their_ops(tmp_path):
    decomp = "torch/_decomp/spyre_decompositions.py"
    refs = "torch/_refs/reductions.py"
    after = {decomp: "from torch._decomp import register_decomposition\n\n\n"
                     "@register_decomposition([aten.neg.default, aten.neg.out])\ndef _neg(a):\n    return 0 - a\n",
             refs: "def softmax(a, dim):\n    return a\n"}
    report = run_stage1(tmp_path, BASE, after)
    assert _selected(report) == {**SOFTMAX, f"{OPS}::TestCommon::test_every_op": ["neg", "softmax.with_dtype"],
                                 f"{OPS}::TestCommon::test_two_ops": ["neg"],
                                 f"{OPS}::TestCommon::test_python_ref": ["_refs.neg", "_refs.softmax"]}
    assert {f.path: f.details for f in report.files} == {decomp: ["decomposition `_neg` of neg added"],
                                                         refs: ["Python reference `softmax` of softmax added"]}
