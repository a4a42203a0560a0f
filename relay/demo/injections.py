"""The changes injected into the demo upstream for the regression-injection corpus (docs/eval.md).

Each is a text-anchored source edit on the corpus base (v2.13.0 plus ``harness_edits``).
``breaking`` says what the change is meant to do to spyre (float64 or complex on the device,
an op the card does not implement, a CUDA-only test let loose); whether it really does is
measured by running the tests at both refs, never declared here.
"""
from __future__ import annotations

import re
from pathlib import Path

from selector.eval.injection import Edit, Injection, Move

CMI = "torch/testing/_internal/common_methods_invocations.py"
HELPERS = "test/common_demo.py"
TREE_TESTS = "test/test_tree_sources.py"
FUNCTIONAL = "torch/nn/functional.py"
NATIVE = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
_ENTRY = re.compile(r'^    (\w+Info)\("([\w.]+)", ', re.M)

COMPARE_ON_DEVICE = '''

def compare_on_device(testcase, fn, *cpu_inputs, device, tolerance=1e-3):
    """Run ``fn`` on ``device`` and on the CPU with the same inputs and compare."""
    actual = fn(*(t.to(device) for t in cpu_inputs))
    testcase.assertEqual(actual.cpu(), fn(*cpu_inputs), atol=tolerance, rtol=tolerance)
'''


def harness_edits(base: Path) -> list[Edit]:
    """Make the tree's own sources executable by ``test/test_tree_sources.py``.

    The demo's OpInfo file is written for change analysis only; the corpus base gives its
    entries dtypes and imports what their sample functions call, so they really run."""
    cmi = (base / CMI).read_text()
    edits = [Edit(CMI, "from functools import partial\n",
                  "from functools import partial\n\nimport torch\nfrom torch.testing import make_tensor\n"
                  "from torch.testing._internal.common_dtype import floating_types\n")]
    # the installed torch has no opinfo/definitions/nn.py: the tree's own is analysed, not run
    edits.append(Edit(CMI, "from torch.testing._internal.opinfo.definitions.nn import op_db as nn_op_db\n",
                      "nn_op_db = []\n"))
    edits += [Edit(CMI, match.group(0), f"{match.group(0)}dtypes=floating_types(), ")
              for match in _ENTRY.finditer(cmi)]
    edits.append(Edit(CMI, 'OpInfo("where", dtypes=floating_types(), supports_out=False)',
                      'OpInfo("where", dtypes=floating_types(), sample_inputs_func=sample_inputs_where, supports_out=False)'))
    edits.append(Edit(CMI, "\n\nop_db = [", '''

def sample_inputs_where(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((4,)) > 0, args=(make((4,)), make((4,))))


op_db = ['''))
    edits.append(Edit(HELPERS, "    return x @ w.t()\n", "    return x @ w.t()\n" + COMPARE_ON_DEVICE))
    return edits


def _i(name: str, kind: str, breaking: bool, summary: str, *edits: Edit | Move) -> Injection:
    return Injection(name=name, kind=kind, breaking=breaking, summary=summary, edits=tuple(edits))


def _float64_sample(fn_anchor: str, line: str) -> Edit:
    return Edit(CMI, fn_anchor, fn_anchor + line)


BREAKING = [
    _i("samples-binary-float64-other", "opinfo_samples", True, "Binary samples: a float64 other operand",
       _float64_sample("    yield SampleInput(make((4, 1)), args=(make((1, 4)),))\n",
                       "    yield SampleInput(make((2, 2)), args=(make_tensor((2, 2), device=device, dtype=torch.float64),))\n")),
    _i("samples-mul-float64-scalar-tensor", "opinfo_samples", True, "mul samples: a float64 0-d tensor",
       _float64_sample("    yield SampleInput(make_tensor((3,), device=device, dtype=dtype), args=(2.5,))\n",
                       "    yield SampleInput(make_tensor((3,), device=device, dtype=dtype),\n"
                       "                      args=(make_tensor((), device=device, dtype=torch.float64),))\n")),
    _i("samples-addcmul-float64-tensor2", "opinfo_samples", True, "addcmul samples: mixed float64 factors",
       _float64_sample("    yield SampleInput(make((3, 3)), args=(make((3, 3)), make((3, 3))))\n",
                       "    yield SampleInput(make((3,)), args=(make((3,)), make_tensor((3,), device=device, dtype=torch.float64)))\n")),
    _i("samples-clamp-float64-bounds", "opinfo_samples", True, "clamp samples: float64 tensor bounds",
       _float64_sample('    yield SampleInput(make((5,)), kwargs={"min": -0.5, "max": 0.5})\n',
                       '    yield SampleInput(make((5,)), kwargs={"min": make_tensor((5,), device=device, dtype=torch.float64)})\n')),
    _i("opinfo-new-digamma", "opinfo_new_entry", True, "OpInfo for digamma",
       Edit(CMI, '    UnaryUfuncInfo("exp", ', '    UnaryUfuncInfo("digamma", dtypes=floating_types()),\n    UnaryUfuncInfo("exp", ')),
    _i("opinfo-new-copysign", "opinfo_new_entry", True, "OpInfo for copysign",
       Edit(CMI, '    BinaryUfuncInfo("maximum", ',
            '    BinaryUfuncInfo("copysign", dtypes=floating_types(), sample_inputs_func=sample_inputs_binary),\n'
            '    BinaryUfuncInfo("maximum", ')),
    _i("unskip-relu-double", "removed_skip", True, "double relu check runs on every device",
       Edit(TREE_TESTS, "    @onlyCPU\n    @dtypes(torch.float64)\n", "    @dtypes(torch.float64)\n")),
    _i("unskip-linear-complex", "removed_skip", True, "complex linear check runs on every device",
       Edit(TREE_TESTS, "    @onlyCPU\n    @dtypes(torch.complex64)\n", "    @dtypes(torch.complex64)\n")),
    _i("helper-make-pair-float64", "shared_helper", True, "make_pair fills in float64 for exact bounds",
       Edit(HELPERS, "    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)\n",
            "    a, b = a.to(device=device, dtype=torch.float64), b.to(device=device, dtype=torch.float64)\n"
            "    return a.to(dtype), b.to(dtype)\n")),
    _i("helper-make-input-float64", "shared_helper", True, "make_input draws in float64 on the device",
       Edit(HELPERS, "    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)\n",
            "    return torch.randn(shape, generator=gen, dtype=torch.float64).to(device=device).to(dtype)\n")),
    _i("helper-check-against-cpu-float64", "shared_helper", True, "check_against_cpu computes in float64",
       Edit(HELPERS, "    actual = fn(*inputs)\n", "    actual = fn(*(t.to(torch.float64) for t in inputs)).to(inputs[0].dtype)\n")),
    _i("wrapped-compare-float64", "helper_via_wrapper", True, "compare_on_device compares in float64",
       Edit(HELPERS, "    actual = fn(*(t.to(device) for t in cpu_inputs))\n",
            "    actual = fn(*(t.to(device=device, dtype=torch.float64) for t in cpu_inputs))\n")),
    _i("wrapped-compare-complex", "helper_via_wrapper", True, "compare_on_device checks the imaginary part too",
       Edit(HELPERS, "    testcase.assertEqual(actual.cpu(), fn(*cpu_inputs), atol=tolerance, rtol=tolerance)\n",
            "    testcase.assertEqual(torch.view_as_real(actual.to(torch.complex64)).cpu(),\n"
            "                         torch.view_as_real(fn(*cpu_inputs).to(torch.complex64)), atol=tolerance, rtol=tolerance)\n")),
    _i("constant-float-dtypes", "module_constant", True, "Tree tests cover float64",
       Edit(TREE_TESTS, "FLOAT_DTYPES = (torch.float32,)\n", "FLOAT_DTYPES = (torch.float32, torch.float64)\n")),
    _i("constant-demo-ops-digamma", "module_constant", True, "test_ops covers digamma",
       Edit("test/test_ops.py", '"maximum", "where", "true_divide")', '"maximum", "where", "true_divide", "digamma")')),
    _i("constant-kwargs-sum-float64", "module_constant", True, "Declared-kernel operands: sum returns float64",
       Edit(TREE_TESTS, 'KWARGS = {"clamp": {"min": -0.5, "max": 0.5}}',
            'KWARGS = {"clamp": {"min": -0.5, "max": 0.5}, "sum": {"dtype": torch.float64}}')),
    _i("base-setup-float64-scratch", "base_class", True, "Tree tests' scratch buffer in float64",
       Edit(TREE_TESTS, "        self.scratch = torch.zeros(2, device=self.device_type)\n",
            "        self.scratch = torch.zeros(2, device=self.device_type, dtype=torch.float64)\n")),
    _i("base-attribute-compute-dtype", "base_class", True, "Tree tests: softmax computes in float64",
       Edit(TREE_TESTS, "    compute_dtype = None  # softmax's dtype argument\n",
            "    compute_dtype = torch.float64  # softmax's dtype argument\n")),
    _i("decorator-add-broadcast-float64", "decorator", True, "add broadcasting covers float64",
       Edit("test/test_binary_ufuncs.py", "    @dtypes(torch.float32)\n    def test_add_broadcast",
            "    @dtypes(torch.float32, torch.float64)\n    def test_add_broadcast")),
    _i("decorator-out-shape-float64", "decorator", True, "test_out_shape over float64 too",
       Edit("test/test_ops.py", "allowed_dtypes=(torch.float32,))\n    def test_out_shape",
            "allowed_dtypes=(torch.float32, torch.float64))\n    def test_out_shape")),
    _i("parametrize-accumulate-float64", "parametrize", True, "sum accumulation in float64",
       Edit(TREE_TESTS, '@parametrize("accumulate", ["float32", "bfloat16"])',
            '@parametrize("accumulate", ["float32", "bfloat16", "float64"])')),
    _i("parametrize-accumulate-complex", "parametrize", True, "sum accumulation in complex64",
       Edit(TREE_TESTS, '@parametrize("accumulate", ["float32", "bfloat16"])',
            '@parametrize("accumulate", ["float32", "complex64", "bfloat16"])')),
    _i("rename-relu-test-float64", "rename", True, "relu values test renamed, checks float64",
       Edit("test/test_nn.py", "    @dtypes(torch.float32)\n    def test_relu_values(",
            "    @dtypes(torch.float64)\n    def test_relu_known_values(")),
    _i("rename-make-pair", "rename", True, "make_pair renamed make_operands (float64 fill)",
       Edit(HELPERS, "def make_pair(shape, device, dtype, *, low=-2.0, high=2.0, seed=0):\n",
            "def make_operands(shape, device, dtype, *, low=-2.0, high=2.0, seed=0):\n"),
       Edit(HELPERS, "    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)\n",
            "    return a.to(device=device, dtype=torch.float64).to(dtype), b.to(device=device, dtype=dtype)\n"),
       Edit("test/test_binary_ufuncs.py", "from common_demo import make_pair\n",
            "from common_demo import make_operands as make_pair\n"),
       Edit(TREE_TESTS, "from common_demo import compare_on_device, make_input, make_pair\n",
            "from common_demo import compare_on_device, make_input\nfrom common_demo import make_operands as make_pair\n")),
    _i("rename-index-file", "rename", True, "Indexing tests get their own file name; gather covers float64",
       Move("test/test_index_ops.py", "test/test_indexing.py"),
       Edit("test/test_indexing.py", "    @dtypes(torch.float32)\n    def test_gather_rows",
            "    @dtypes(torch.float32, torch.float64)\n    def test_gather_rows")),
    _i("framework-dtypes-if-privateuse1", "device_framework", True, "linear shapes on PrivateUse1 in float64",
       Edit("test/test_nn.py", "    @dtypes(torch.float32)\n    def test_linear_shapes",
            "    @dtypes(torch.float32)\n    @dtypesIfPRIVATEUSE1(torch.float64)\n    def test_linear_shapes"),
       Edit("test/test_nn.py", "    dtypes,\n", "    dtypes,\n    dtypesIfPRIVATEUSE1,\n")),
    _i("framework-ops-supported-dtypes", "device_framework", True, "tree OpInfo tests over every supported dtype",
       Edit(TREE_TESTS, "    @ops(TREE_OP_DB, allowed_dtypes=FLOAT_DTYPES)\n",
            "    @ops(TREE_OP_DB, dtypes=OpDTypes.supported)\n"),
       Edit(TREE_TESTS, "import dtypes, instantiate_device_type_tests, onlyCPU, ops\n",
            "import OpDTypes, dtypes, instantiate_device_type_tests, onlyCPU, ops\n")),
    _i("impl-softmax-double", "op_implementation", True, "softmax accumulates in double",
       Edit(FUNCTIONAL, "    if dtype is None:\n        return input.softmax(dim)\n",
            "    if dtype is None:\n        return input.double().softmax(dim).to(input.dtype)\n")),
    _i("impl-relu-decomposed", "op_implementation", True, "relu decomposed into where",
       Edit(FUNCTIONAL, "    return torch.relu(input)\n",
            "    return torch.where(input > 0, input, torch.zeros((), dtype=torch.float64, device=input.device))\n")),
    _i("impl-linear-decomposed", "op_implementation", True, "linear decomposed into a double matmul",
       Edit(FUNCTIONAL, "    return torch._C._nn.linear(input, weight, bias)\n",
            "    out = (input.double() @ weight.double().t()).to(input.dtype)\n"
            "    return out if bias is None else out + bias\n")),
    _i("native-declare-digamma", "native_functions", True, "Declare digamma",
       Edit(NATIVE, "- func: maximum(", "- func: digamma(Tensor self) -> Tensor\n  variants: function, method\n"
                                         "  tags: [core, pointwise]\n\n- func: maximum(")),
    _i("native-declare-copysign", "native_functions", True, "Declare copysign",
       Edit(NATIVE, "- func: maximum(", "- func: copysign.Tensor(Tensor self, Tensor other) -> Tensor\n"
                                         "  variants: function, method\n  tags: pointwise\n\n- func: maximum(")),
    _i("derivative-xlogy", "derivatives", True, "Gradient formula for xlogy",
       Edit(DERIVATIVES, "- name: maximum(",
            "- name: xlogy.Tensor(Tensor self, Tensor other) -> Tensor\n"
            "  self: grad * at::xlogy((self != 0), other)\n  other: grad * self / other\n\n- name: maximum(")),
    _i("derivative-lgamma", "derivatives", True, "Gradient formula for lgamma",
       Edit(DERIVATIVES, "- name: maximum(", "- name: lgamma(Tensor self) -> Tensor\n  self: grad * digamma(self)\n\n- name: maximum(")),
]

NO_OP = [
    _i("noop-comment-test", "noop_comment", False, "Comment on scalar multiplication",
       Edit("test/test_binary_ufuncs.py", "        self.assertEqual((a * 3).cpu(), a.cpu() * 3)\n",
            "        # and the values match the CPU's\n        self.assertEqual((a * 3).cpu(), a.cpu() * 3)\n")),
    _i("noop-comment-helper", "noop_comment", False, "Comment in make_pair",
       Edit(HELPERS, "    gen = torch.Generator().manual_seed(seed)\n    a = ",
            "    # one generator for both operands: b depends on a's draw\n    gen = torch.Generator().manual_seed(seed)\n    a = ")),
    _i("noop-comment-opinfo", "noop_comment", False, "Comment on binary samples",
       Edit(CMI, "def sample_inputs_binary(op_info, device, dtype, requires_grad, **kwargs):\n",
            "# Shared by every binary entry below.\ndef sample_inputs_binary(op_info, device, dtype, requires_grad, **kwargs):\n")),
    _i("noop-comment-yaml", "noop_comment", False, "Comment in derivatives.yaml",
       Edit(DERIVATIVES, "# Demo subset of the autograd formulas.\n",
            "# Demo subset of the autograd formulas.\n# Formulas use the names of the schema's arguments.\n")),
    _i("noop-docstring-test", "noop_docstring", False, "Docstring for the narrow test",
       Edit("test/test_shape_ops.py", "    def test_narrow_basic(self, device, dtype):\n",
            "    def test_narrow_basic(self, device, dtype):\n        \"\"\"narrow picks columns 2..4.\"\"\"\n")),
    _i("noop-docstring-helper", "noop_docstring", False, "linear_reference docstring reworded",
       Edit(HELPERS, '"""F.linear written out as a matmul, for value checks."""',
            '"""``F.linear`` without bias, written out as a matmul (for value checks)."""')),
    _i("noop-docstring-functional", "noop_docstring", False, "Docstring for softmax",
       Edit(FUNCTIONAL, "def softmax(input, dim=None, dtype=None):\n",
            "def softmax(input, dim=None, dtype=None):\n    \"\"\"Softmax over ``dim``, optionally in ``dtype``.\"\"\"\n")),
    _i("noop-whitespace-test", "noop_whitespace", False, "Blank line between reductions tests",
       Edit("test/test_reductions.py", "class TestReductions(TestCase):\n",
            "class TestReductions(TestCase):\n\n")),
    _i("noop-whitespace-opinfo", "noop_whitespace", False, "Trailing blank lines in the OpInfo file",
       Edit(CMI, "] + linalg_op_db + nn_op_db\n", "] + linalg_op_db + nn_op_db\n\n")),
    _i("noop-format-test", "noop_formatting", False, "Reformat the division test",
       Edit("test/test_binary_ufuncs.py",
            '        self.assertEqual(torch.div(a, b, rounding_mode="floor").cpu(), torch.tensor([3.0, -4.0, -3.0]))\n',
            '        self.assertEqual(\n            torch.div(a, b, rounding_mode="floor").cpu(),\n'
            '            torch.tensor([3.0, -4.0, -3.0]),\n        )\n')),
    _i("noop-format-helper", "noop_formatting", False, "Reformat make_input",
       Edit(HELPERS, "def make_input(shape, device, dtype, *, seed=0):\n",
            "def make_input(\n    shape,\n    device,\n    dtype,\n    *,\n    seed=0,\n):\n")),
    _i("noop-cuda-only-test", "noop_cuda_only", False, "CUDA flip test covers 8 elements",
       Edit("test/test_shape_ops.py", "        x = torch.arange(4, device=device)\n        self.assertEqual(x.flip(0).cpu(), torch.tensor([3, 2, 1, 0]))\n",
            "        x = torch.arange(8, device=device)\n        self.assertEqual(x.flip(0).cpu(), torch.arange(7, -1, -1))\n")),
    _i("noop-cuda-only-dtypes", "noop_cuda_only", False, "softmax rows test covers float64 on CUDA",
       Edit("test/test_nn.py", "    @dtypes(torch.float32)\n    def test_softmax_rows_sum_to_one",
            "    @dtypes(torch.float32)\n    @dtypesIfCUDA(torch.float32, torch.float64)\n    def test_softmax_rows_sum_to_one"),
       Edit("test/test_nn.py", "    dtypes,\n", "    dtypes,\n    dtypesIfCUDA,\n")),
]


def injections() -> list[Injection]:
    return BREAKING + NO_OP
