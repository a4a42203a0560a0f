"""The demo upstream's non-test files at v2.13.0: a PyTorch-shaped source tree read only as text.

None of this is imported: the demo tests use the installed torch. These files exist so the
2.13 -> 2.14 diff touches OpInfo definitions, codegen YAML, Python and C++ sources, CI and docs.
"""

OPINFO_DB = '''\
"""OpInfo-style definitions of the demo upstream (read by the selector's AST scan, never imported)."""
from functools import partial

from torch.testing._internal.opinfo.core import (
    BinaryUfuncInfo,
    OpInfo,
    ReductionOpInfo,
    SampleInput,
    UnaryUfuncInfo,
)
from torch.testing._internal.opinfo.definitions.linalg import op_db as linalg_op_db
from torch.testing._internal.opinfo.definitions.nn import op_db as nn_op_db


def sample_inputs_binary(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((4, 4)), args=(make((4, 4)),))
    yield SampleInput(make((4, 1)), args=(make((1, 4)),))


def sample_inputs_mul(op_info, device, dtype, requires_grad, **kwargs):
    yield from sample_inputs_binary(op_info, device, dtype, requires_grad)
    yield SampleInput(make_tensor((3,), device=device, dtype=dtype), args=(2.5,))


def sample_inputs_addcmul(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((3, 3)), args=(make((3, 3)), make((3, 3))))


def sample_inputs_clamp(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((5,)), kwargs={"min": -0.5, "max": 0.5})


op_db = [
    BinaryUfuncInfo("add", sample_inputs_func=sample_inputs_binary, supports_out=True),
    BinaryUfuncInfo("mul", sample_inputs_func=sample_inputs_mul, supports_out=True),
    BinaryUfuncInfo("sub", sample_inputs_func=sample_inputs_binary, supports_out=True),
    BinaryUfuncInfo("true_divide", sample_inputs_func=sample_inputs_binary, supports_out=True),
    BinaryUfuncInfo("maximum", sample_inputs_func=sample_inputs_binary),
    UnaryUfuncInfo("abs", supports_forward_ad=True),
    UnaryUfuncInfo("neg", supports_forward_ad=True),
    UnaryUfuncInfo("exp", supports_forward_ad=True),
    OpInfo("addcmul", sample_inputs_func=sample_inputs_addcmul),
    OpInfo("clamp", sample_inputs_func=sample_inputs_clamp),
    OpInfo("where", supports_out=False),
    ReductionOpInfo("sum", identity=0, supports_out=False),
] + linalg_op_db + nn_op_db
'''

OPINFO_LINALG = '''\
"""Linear-algebra OpInfo entries of the demo upstream."""
from torch.testing._internal.opinfo.core import OpInfo


def sample_inputs_matmul(op_info, device, dtype, requires_grad, **kwargs):
    yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype), args=(make_tensor((4, 2), device=device, dtype=dtype),))


op_db = [
    OpInfo("matmul", sample_inputs_func=sample_inputs_matmul, supports_out=False),
    OpInfo("mm", sample_inputs_func=sample_inputs_matmul, supports_out=True),
]
'''

OPINFO_NN = '''\
"""torch.nn.functional OpInfo entries of the demo upstream."""
from torch.testing._internal.opinfo.core import OpInfo, UnaryUfuncInfo


def sample_inputs_softmax(op_info, device, dtype, requires_grad, with_dtype=False, **kwargs):
    kwargs = {"dtype": dtype} if with_dtype else {}
    yield SampleInput(make_tensor((3, 5), device=device, dtype=dtype), args=(1,), kwargs=kwargs)


op_db = [
    OpInfo("softmax", sample_inputs_func=sample_inputs_softmax, supports_out=False),
    OpInfo("softmax", variant_test_name="with_dtype", sample_inputs_func=sample_inputs_softmax,
           supports_out=False),
    UnaryUfuncInfo("nn.functional.relu", supports_forward_ad=True),
]
'''

NATIVE_FUNCTIONS = '''\
# Demo subset of ATen's operator declarations.
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  structured_delegate: add.out
  variants: function, method
  tags: [core, pointwise]

- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  structured_delegate: mul.out
  variants: function, method
  tags: [core, pointwise]

- func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
  structured_delegate: clamp.out
  variants: function, method
  tags: [core, pointwise]

- func: addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
  structured_delegate: addcmul.out
  variants: method, function
  tags: pointwise

- func: maximum(Tensor self, Tensor other) -> Tensor
  structured_delegate: maximum.out
  variants: method, function
  tags: [core, pointwise]

- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  structured_delegate: sum.IntList_out
  variants: function, method
  tags: core
'''

DERIVATIVES = '''\
# Demo subset of the autograd formulas.
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: handle_r_to_c(self.scalar_type(), grad)
  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))

- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())

- name: maximum(Tensor self, Tensor other) -> Tensor
  self: at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)
  other: at::where(self == other, grad / 2, grad).masked_fill_(self > other, 0)
'''

FUNCTIONAL = '''\
"""Functional interface (demo excerpt)."""
import torch


def relu(input, inplace=False):
    if inplace:
        return torch.relu_(input)
    return torch.relu(input)


def softmax(input, dim=None, dtype=None):
    if dtype is None:
        return input.softmax(dim)
    return input.softmax(dim, dtype=dtype)


def linear(input, weight, bias=None):
    return torch._C._nn.linear(input, weight, bias)
'''

SAMPLER = '''\
"""Samplers (demo excerpt)."""


class SequentialSampler:
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)
'''

BINARY_OPS_CPP = '''\
// Binary pointwise kernels (demo excerpt).
#include <ATen/native/BinaryOps.h>

namespace at::native {

TORCH_IMPL_FUNC(maximum_out) (const Tensor& self, const Tensor& other, const Tensor& result) {
  maximum_stub(device_type(), *this);
}

TORCH_IMPL_FUNC(atan2_out) (const Tensor& self, const Tensor& other, const Tensor& result) {
  atan2_stub(device_type(), *this);
}

} // namespace at::native
'''

DISPATCH_KEY_CPP = '''\
// Dispatch key names (demo excerpt).
#include <c10/core/DispatchKey.h>

namespace c10 {
const char* toString(BackendComponent t) {
  switch (t) {
    case BackendComponent::CPUBit: return "CPUBit";
    case BackendComponent::PrivateUse1Bit: return "PrivateUse1Bit";
    default: return "UNKNOWN_BACKEND_BIT";
  }
}
} // namespace c10
'''

WORKFLOW = '''\
name: pull
on: [pull_request]
jobs:
  linux-test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: python test/run_test.py --verbose
'''

README = '''\
# Demo upstream

A small PyTorch-shaped repository generated by `relay-cli demo init` for Spyre CI Relay.
The test files in `test/` are device-generic tests that run against the *installed* torch;
the `torch/`, `aten/`, `c10/` and `tools/` trees are text for the diff only and are never imported.
Run tests from the `test/` directory so this `torch/` directory never shadows the installed one.
'''

NOTES = '''\
# Notes on out-of-tree devices

Device-generic tests are instantiated per device type with `instantiate_device_type_tests`.
'''

SOURCE_FILES = {
    "README.md": README,
    "docs/source/notes/devices.md": NOTES,
    ".github/workflows/pull.yml": WORKFLOW,
    "aten/src/ATen/native/native_functions.yaml": NATIVE_FUNCTIONS,
    "aten/src/ATen/native/BinaryOps.cpp": BINARY_OPS_CPP,
    "c10/core/DispatchKey.cpp": DISPATCH_KEY_CPP,
    "tools/autograd/derivatives.yaml": DERIVATIVES,
    "torch/nn/functional.py": FUNCTIONAL,
    "torch/utils/data/sampler.py": SAMPLER,
    "torch/testing/_internal/common_methods_invocations.py": OPINFO_DB,
    "torch/testing/_internal/opinfo/definitions/linalg.py": OPINFO_LINALG,
    "torch/testing/_internal/opinfo/definitions/nn.py": OPINFO_NN,
}

# A tiny PNG (1x1, grey): the binary file the 2.14 change replaces.
LOGO_V213 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c63600000000200015e2c39d40000000049454e44ae426082")
