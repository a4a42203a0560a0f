"""Tests that execute this tree's own sources on the device under test.

The other demo tests run the installed torch's op_db; these load the tree's OpInfo entries
(torch/testing/_internal/common_methods_invocations.py), its Python functional reference
(torch/nn/functional.py) and the ops its native_functions.yaml and derivatives.yaml declare,
so a change to any of them changes what runs.
"""
import importlib.util
import re
from pathlib import Path

import torch
import yaml
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, onlyCPU, ops
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests

from common_demo import compare_on_device, make_input, make_pair

TREE = Path(__file__).resolve().parents[1]
FLOAT_DTYPES = (torch.float32,)
TOLERANCE = 1e-3


def _load(name, relative):
    spec = importlib.util.spec_from_file_location(name, TREE / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _declared(relative, key):
    """Op names declared in one of the tree's yaml files (``func:`` or ``name:`` schemas)."""
    entries = yaml.safe_load((TREE / relative).read_text()) or []
    return sorted({re.match(r"[a-z_0-9]+", entry[key]).group(0) for entry in entries})


_cmi = _load("tree_common_methods_invocations", "torch/testing/_internal/common_methods_invocations.py")
TREE_OP_DB = _cmi.op_db[: len(_cmi.op_db) - len(_cmi.linalg_op_db) - len(_cmi.nn_op_db)]
tree_F = _load("tree_functional", "torch/nn/functional.py")
NATIVE_OPS = _declared("aten/src/ATen/native/native_functions.yaml", "func")
GRADIENT_OPS = _declared("tools/autograd/derivatives.yaml", "name")
ARITY = {"add": 2, "mul": 2, "maximum": 2, "addcmul": 3, "copysign": 2, "xlogy": 2, "atan2": 2}
KWARGS = {"clamp": {"min": -0.5, "max": 0.5}}


def _to(sample, device):
    return sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)


def _operands(name, device, dtype):
    return [make_input((4,), device, dtype, seed=i) for i in range(ARITY.get(name, 1))]


def compare_reference(testcase, fn, *cpu_inputs, device):
    # the tests reach the shared comparison through this wrapper
    compare_on_device(testcase, fn, *cpu_inputs, device=device, tolerance=TOLERANCE)


class TreeDeviceTestBase(TestCase):
    input_shape = (3, 4)
    compute_dtype = None  # softmax's dtype argument

    def setUp(self):
        super().setUp()
        self.seed = 0
        self.scratch = torch.zeros(2, device=self.device_type)


class TestTreeSources(TreeDeviceTestBase):
    @ops(TREE_OP_DB, allowed_dtypes=FLOAT_DTYPES)
    def test_tree_opinfo_samples(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = _to(cpu, device)
            actual = op(sample.input, *sample.args, **sample.kwargs)
            self.assertEqual(actual.cpu(), op(cpu.input, *cpu.args, **cpu.kwargs), atol=TOLERANCE, rtol=TOLERANCE)

    @dtypes(*FLOAT_DTYPES)
    def test_functional_softmax(self, device, dtype):
        x = make_input(self.input_shape, "cpu", dtype, seed=self.seed)
        compare_on_device(self, lambda t: tree_F.softmax(t, dim=1, dtype=self.compute_dtype), x, device=device)

    @dtypes(*FLOAT_DTYPES)
    def test_functional_relu(self, device, dtype):
        x = make_input(self.input_shape, "cpu", dtype, seed=self.seed)
        compare_reference(self, tree_F.relu, x, device=device)

    @dtypes(torch.float32)
    def test_functional_linear(self, device, dtype):
        x, w = make_pair(self.input_shape, "cpu", dtype)
        compare_reference(self, lambda a, b: tree_F.linear(a, b), x, w, device=device)

    @dtypes(torch.float32)
    @parametrize("accumulate", ["float32", "bfloat16"])
    def test_sum_accumulates(self, device, dtype, accumulate):
        x = make_input(self.input_shape, device, dtype)
        total = x.to(getattr(torch, accumulate)).sum()
        self.assertEqual(total.float().cpu(), x.cpu().sum(), atol=0.1, rtol=0.05)

    @onlyCPU
    @dtypes(torch.float64)
    def test_functional_relu_double(self, device, dtype):
        x = make_input(self.input_shape, device, dtype)
        self.assertEqual(tree_F.relu(x).cpu(), x.cpu().clamp_min(0))

    @onlyCPU
    @dtypes(torch.complex64)
    def test_functional_linear_complex(self, device, dtype):
        x, w = make_input(self.input_shape, device, dtype), make_input(self.input_shape, device, dtype, seed=1)
        self.assertEqual(tree_F.linear(x, w).cpu(), x.cpu() @ w.cpu().t())

    @dtypes(torch.float32)
    @parametrize("op_name", NATIVE_OPS)
    def test_declared_kernel(self, device, dtype, op_name):
        inputs = _operands(op_name, "cpu", dtype)
        kwargs = KWARGS.get(op_name, {})
        compare_on_device(self, lambda *t: getattr(torch, op_name)(*t, **kwargs), *inputs, device=device)

    @dtypes(torch.float32)
    @parametrize("op_name", GRADIENT_OPS)
    def test_declared_gradient(self, device, dtype, op_name):
        inputs = [t.to(device).requires_grad_() for t in _operands(op_name, "cpu", dtype)]
        getattr(torch, op_name)(*inputs, **KWARGS.get(op_name, {})).sum().backward()
        self.assertTrue(all(t.grad is not None for t in inputs))


instantiate_device_type_tests(TestTreeSources, globals())

if __name__ == "__main__":
    run_tests()
