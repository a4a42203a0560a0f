"""The v2.13.0 -> v2.14.0 change of the demo upstream, as edits, and what stage 1 must find.

Each commit is a list of edits applied to the v2.13.0 tree. ``EXPECTED`` is the ground truth
written to ``demo-changeset.json``: it is declared here by hand, not computed by the selector.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    path: str
    old: str | None = None  # text replaced (must occur exactly once); None with new: a new file
    new: str | None = None  # None with old None: delete the file
    rename_to: str | None = None


B = "test/test_binary_ufuncs.py"
U = "test/test_unary_ufuncs.py"
S = "test/test_shape_ops.py"
R = "test/test_reductions.py"
L = "test/test_linalg.py"
OPI = "torch/testing/_internal/common_methods_invocations.py"
NN_DEFS = "torch/testing/_internal/opinfo/definitions/nn.py"
LINALG_DEFS = "torch/testing/_internal/opinfo/definitions/linalg.py"

COMMITS: list[tuple[str, list[Edit]]] = [
    ("Binary ufuncs: cover float64 broadcasting, add sub(alpha=...), tidy comments", [
        Edit(B, "    @dtypes(torch.float32)\n    def test_add_broadcast",
             "    @dtypes(torch.float32, torch.float64)\n    def test_add_broadcast"),
        Edit(B, "        # multiplying by a Python scalar keeps the tensor dtype\n",
             "        # a Python scalar operand never promotes the tensor's dtype\n"),
        Edit(B, '''        self.assertEqual(torch.div(a, b, rounding_mode="floor").cpu(), torch.tensor([3.0, -4.0, -3.0]))
''', '''        self.assertEqual(
            torch.div(a, b, rounding_mode="floor").cpu(),
            torch.tensor([3.0, -4.0, -3.0]),
        )
'''),
        Edit(B, "    @dtypes(torch.float64)\n    def test_pow_float64", '''    @dtypes(torch.float32)
    def test_sub_alpha(self, device, dtype):
        a, b = make_pair((5,), device, dtype)
        self.assertEqual(torch.sub(a, b, alpha=2).cpu(), a.cpu() - 2 * b.cpu())

    @dtypes(torch.float64)
    def test_pow_float64'''),
    ]),
    ("Unary ufuncs: rename exp test, drop legacy abs test, sqrt in float32", [
        Edit(U, "    def test_exp_small(self", "    def test_exp_small_inputs(self"),
        Edit(U, "        self.assertEqual((-x).cpu(), -(x.cpu()))",
             "        self.assertEqual((-x).cpu(), x.cpu().neg())\n        self.assertEqual((-(-x)).cpu(), x.cpu())"),
        Edit(U, '''    @dtypes(torch.float32)
    def test_abs_legacy(self, device, dtype):
        x = torch.tensor([-1.0, 0.0, 2.0], device=device, dtype=dtype)
        self.assertEqual(x.abs().cpu(), torch.tensor([1.0, 0.0, 2.0]))

''', ""),
        Edit(U, "    @dtypes(torch.float64)\n    def test_sqrt_values", "    @dtypes(torch.float32)\n    def test_sqrt_values"),
    ]),
    ("Shape ops: narrow is a view op; reformat and document shape tests", [
        Edit(S, '''    @dtypes(torch.float32)
    def test_narrow_basic(self, device, dtype):
        x = make_input((4, 6), device, dtype)
        self.assertEqual(x.narrow(1, 2, 3).cpu(), x.cpu()[:, 2:5])

''', ""),
        Edit(S, '''        v[0, 0] = 1.0
        self.assertEqual(x[0].item(), 1.0)
''', '''        v[0, 0] = 1.0
        self.assertEqual(x[0].item(), 1.0)

    @dtypes(torch.float32)
    def test_narrow_basic(self, device, dtype):
        x = make_input((4, 6), device, dtype)
        self.assertEqual(x.narrow(1, 2, 3).cpu(), x.cpu()[:, 2:5])
'''),
        Edit(S, "        self.assertEqual(x.reshape(6, 4).reshape(2, 3, 4).cpu(), x.cpu())",
             "        self.assertEqual(x.reshape(6, 4)\n                          .reshape(2, 3, 4)\n                          .cpu(), x.cpu())"),
        Edit(S, '''        """Transposing twice gives the original tensor."""
        x = make_input((3, 5), device, dtype)
''', '''        """t() is an involution: applying it twice is the identity."""
        x = make_input((3, 5), device, dtype)  # non-square on purpose
'''),
    ]),
    ("Reductions: reference sums accumulate on CPU in float64; complex128 sum test", [
        Edit(R, "    return x.cpu().sum(dim=dim, keepdim=keepdim)",
             "    return x.cpu().double().sum(dim=dim, keepdim=keepdim).to(x.dtype)"),
        Edit(R, "    @dtypes(torch.float32)\n    def test_mean_dim", '''    @dtypes(torch.complex128)
    def test_sum_complex128(self, device, dtype):
        x = torch.tensor([1 + 1j, 2 - 1j], dtype=dtype).to(device)
        self.assertEqual(x.sum().cpu(), torch.tensor(3 + 0j, dtype=dtype))

    @dtypes(torch.float32)
    def test_mean_dim'''),
    ]),
    ("Linalg: matmul tests are eager-only", [
        Edit(L, "from common_demo import make_input\n",
             "from torch.testing._internal.common_utils import skipIfTorchDynamo\n\nfrom common_demo import make_input\n"),
        Edit(L, "\n\nclass TestMatmul(TestCase):", '\n\n@skipIfTorchDynamo("matmul checks compare eager kernels only")\nclass TestMatmul(TestCase):'),
    ]),
    ("Indexing tests get their own file name", [
        Edit("test/test_index_ops.py", rename_to="test/test_indexing.py"),
    ]),
    ("Test helpers: compare against CPU with NaNs allowed; a float64 linear reference", [
        Edit("test/common_demo.py", "    testcase.assertEqual(actual.cpu(), expected, atol=atol, rtol=rtol)",
             "    testcase.assertEqual(actual.cpu(), expected, atol=atol, rtol=rtol, equal_nan=True)"),
        # No test file changes with it: the test this breaks on spyre sits in an untouched file.
        Edit("test/common_demo.py", "    return x @ w.t()", "    return (x.double() @ w.double().t()).to(x.dtype)"),
    ]),
    ("OpInfo: mul two-scalar support, addcmul value samples, logaddexp entry, drop true_divide alias", [
        Edit(OPI, '    BinaryUfuncInfo("mul", sample_inputs_func=sample_inputs_mul, supports_out=True),',
             '    BinaryUfuncInfo("mul", sample_inputs_func=sample_inputs_mul, supports_out=True,\n'
             '                    supports_two_python_scalars=True),'),
        Edit(OPI, "    yield SampleInput(make((3, 3)), args=(make((3, 3)), make((3, 3))))",
             "    yield SampleInput(make((3, 3)), args=(make((3, 3)), make((3, 3))))\n"
             "    yield SampleInput(make((3, 3)), args=(make((3, 3)), make((3, 3))), kwargs={\"value\": 0.5})"),
        Edit(OPI, '    BinaryUfuncInfo("true_divide", sample_inputs_func=sample_inputs_binary, supports_out=True),\n',
             '    BinaryUfuncInfo("logaddexp", sample_inputs_func=sample_inputs_binary),\n'),
        Edit(NN_DEFS, '    OpInfo("softmax", variant_test_name="with_dtype", sample_inputs_func=sample_inputs_softmax,\n'
                      '           supports_out=False),',
             '    OpInfo("softmax", variant_test_name="with_dtype", sample_inputs_func=sample_inputs_softmax,\n'
             '           supports_out=False, supports_forward_ad=True),'),
        Edit(LINALG_DEFS, '    OpInfo("mm", sample_inputs_func=sample_inputs_matmul, supports_out=True),',
             '    OpInfo("mm",\n           sample_inputs_func=sample_inputs_matmul,\n           supports_out=True),  # same entry, reformatted'),
    ]),
    ("ATen and autograd: clamp tags, maximum gradient, kernel and Python source edits", [
        Edit("aten/src/ATen/native/native_functions.yaml",
             "- func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor\n"
             "  structured_delegate: clamp.out\n  variants: function, method\n  tags: [core, pointwise]",
             "- func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor\n"
             "  structured_delegate: clamp.out\n  variants: function, method\n  tags: [core, pointwise, reduction_safe]"),
        Edit("tools/autograd/derivatives.yaml",
             "  self: at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)",
             "  self: at::where(self == other, grad * 0.5, grad).masked_fill_(self < other, 0)"),
        Edit("aten/src/ATen/native/BinaryOps.cpp", "  maximum_stub(device_type(), *this);",
             "  // NaN propagates from either side\n  maximum_stub(device_type(), *this);"),
        Edit("torch/nn/functional.py", "    if inplace:\n        return torch.relu_(input)",
             "    if inplace:\n        result = torch.relu_(input)\n        return result"),
        Edit("torch/utils/data/sampler.py", "        return iter(range(len(self.data_source)))",
             "        yield from range(len(self.data_source))"),
        Edit("c10/core/DispatchKey.cpp", '    default: return "UNKNOWN_BACKEND_BIT";',
             '    case BackendComponent::MetaBit: return "MetaBit";\n    default: return "UNKNOWN_BACKEND_BIT";'),
    ]),
    ("CI and docs for 2.14", [
        Edit(".github/workflows/pull.yml", "      - run: python test/run_test.py --verbose",
             "      - run: python test/run_test.py --verbose --keep-going"),
        Edit("docs/source/notes/devices.md", "with `instantiate_device_type_tests`.",
             "with `instantiate_device_type_tests`; `only_for` and `except_for` narrow the device list."),
    ]),
]


def tid(path: str, cls: str, name: str) -> str:
    return f"{path}::{cls}::{name}"


_OPS_TESTS = [tid("test/test_ops.py", "TestCommonDemo", "test_matches_reference"),
              tid("test/test_ops.py", "TestCommonDemo", "test_out_shape"),
              tid("test/test_ops_full.py", "TestCommonFull", "test_result_on_device"),
              tid("test/test_ops_full.py", "TestCommonFull", "test_runs_on_device")]

# Ground truth: the stage-1 candidates by (strongest) change kind, what must be ignored, and
# what running the selected tests on spyre must show.
EXPECTED = {
    "candidates": {
        "added": [tid(B, "TestBinaryUfuncs", "test_sub_alpha"), tid(R, "TestReductions", "test_sum_complex128")],
        "renamed": [{"test": tid(U, "TestUnaryUfuncs", "test_exp_small_inputs"),
                     "from": tid(U, "TestUnaryUfuncs", "test_exp_small")}],
        "moved": [{"test": tid(S, "TestViewOps", "test_narrow_basic"), "from": tid(S, "TestShapeOps", "test_narrow_basic")},
                  {"test": tid("test/test_indexing.py", "TestIndexing", "test_gather_rows"),
                   "from": tid("test/test_index_ops.py", "TestIndexing", "test_gather_rows")},
                  {"test": tid("test/test_indexing.py", "TestIndexing", "test_index_select_basic"),
                   "from": tid("test/test_index_ops.py", "TestIndexing", "test_index_select_basic")}],
        "modified": [tid(B, "TestBinaryUfuncs", "test_add_broadcast"), tid(U, "TestUnaryUfuncs", "test_neg_values"),
                     tid(U, "TestUnaryUfuncs", "test_sqrt_values"),
                     tid(L, "TestMatmul", "test_matmul_2d"), tid(L, "TestMatmul", "test_matmul_batched"),
                     tid(L, "TestMatmul", "test_mm_identity")],
        "helper": [tid(R, "TestReductions", "test_sum_dim"), tid(R, "TestReductions", "test_sum_float64_precision"),
                   tid(R, "TestReductions", "test_sum_keepdim"), tid(U, "TestUnaryUfuncs", "test_sin_cpu_parity"),
                   tid(U, "TestUnaryUfuncs", "test_tanh_cpu_parity"),
                   tid("test/test_nn.py", "TestNNDemo", "test_linear_matches_reference")],
        "opinfo": [{"test": t, "ops": ["addcmul", "clamp", "logaddexp", "maximum", "mul", "softmax.with_dtype"]}
                   for t in _OPS_TESTS],
        "source": [tid(B, "TestBinaryUfuncs", "test_atan2_quadrants"), tid(B, "TestBinaryUfuncs", "test_maximum_nan"),
                   tid("test/test_nn.py", "TestNNDemo", "test_linear_shapes"),
                   tid("test/test_nn.py", "TestNNDemo", "test_relu_values"),
                   tid("test/test_nn.py", "TestNNDemo", "test_softmax_rows_sum_to_one")],
        "always": [tid("test/test_torch.py", "TestTorchDeviceType", "test_tensor_basics")],
    },
    "class_decorator_changed": [tid(L, "TestMatmul", "*")],
    "removed": [tid(U, "TestUnaryUfuncs", "test_abs_legacy")],
    "removed_op_variants": [{"test": t, "op": "true_divide"} for t in _OPS_TESTS],
    "ignored": {
        "formatting_only": [tid(B, "TestBinaryUfuncs", "test_div_rounding"), tid(S, "TestShapeOps", "test_reshape_roundtrip")],
        "comment_or_docstring_only": [tid(B, "TestBinaryUfuncs", "test_mul_scalar"),
                                      tid(S, "TestShapeOps", "test_transpose_twice")],
    },
    "opinfo_entries": {"added": ["logaddexp"], "removed": ["true_divide"],
                       "modified": ["addcmul", "mul", "softmax.with_dtype"], "unchanged_but_reformatted": ["mm"]},
    "source_ops": {"native_functions.yaml": ["clamp"], "derivatives.yaml": ["maximum"]},
    "files": {
        B: "test_file", U: "test_file", S: "test_file", R: "test_file", L: "test_file",
        "test/test_indexing.py": "test_file", "test/common_demo.py": "test_helper",
        OPI: "opinfo", NN_DEFS: "opinfo", LINALG_DEFS: "opinfo",
        "aten/src/ATen/native/native_functions.yaml": "native_functions",
        "tools/autograd/derivatives.yaml": "derivatives",
        "aten/src/ATen/native/BinaryOps.cpp": "cpp_source", "c10/core/DispatchKey.cpp": "cpp_source",
        "torch/nn/functional.py": "torch_python", "torch/utils/data/sampler.py": "torch_python",
        ".github/workflows/pull.yml": "build_ci", "docs/source/notes/devices.md": "docs",
        "docs/source/_static/logo.png": "docs",
    },
    # On spyre at v2.14.0 (pass on cpu): the device refuses float64 and complex128.
    "expected_regressions": [
        {"test": tid(B, "TestBinaryUfuncs", "test_add_broadcast"), "dtype": "float64",
         "why": "new float64 case; spyre refuses float64"},
        {"test": tid(R, "TestReductions", "test_sum_complex128"), "dtype": "complex128",
         "why": "new complex128 test; spyre refuses complex128"},
        # In a test file the change does not touch: "run the edited test files" misses it.
        {"test": tid("test/test_nn.py", "TestNNDemo", "test_linear_matches_reference"), "dtype": "float32",
         "why": "the shared linear_reference helper now computes in float64 on the device; spyre refuses float64"},
    ],
    # Fail on spyre at both refs; testdefs/rules/demo marks them xfail with a structured reason.
    "known_failures": [
        {"test": tid(B, "TestBinaryUfuncs", "test_pow_float64"), "dtype": "float64", "selected": False},
        {"test": tid(R, "TestReductions", "test_sum_float64_precision"), "dtype": "float64", "selected": True},
    ] + [{"test": t, "op": "softmax.with_dtype", "dtype": "float32", "selected": True,
          "why": "the samples ask for float64 results"} for t in _OPS_TESTS],
    # Failed at v2.13.0 on spyre, pass at v2.14.0 (the rules' strict xfail then asks to be promoted).
    "fixed": [{"test": tid(U, "TestUnaryUfuncs", "test_sqrt_values"), "dtype": "float32",
               "was": "float64 at v2.13.0"}],
    # Restricted to other devices: excluded by the demo rules as not applicable.
    "not_applicable": [tid(U, "TestUnaryUfuncs", "test_exp_onlycpu_denormals"),
                       tid(S, "TestShapeOps", "test_flip_cuda_streams")],
}
