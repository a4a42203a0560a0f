"""The demo upstream's test/ directory at v2.13.0: device-generic tests that really run.

Written for this project in the style of PyTorch's test files. They import the installed
torch's ``torch.testing._internal`` (op_db, module_db, instantiate_device_type_tests) and run
from the upstream's ``test/`` directory, so the demo's text copy of ``torch/`` never shadows
the real one.
"""

HEADER = '''\
import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests
'''

COMMON_DEMO = '''\
"""Helpers shared by the demo tests (imported as ``common_demo`` from the test/ directory)."""
import torch


def make_pair(shape, device, dtype, *, low=-2.0, high=2.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.empty(shape).uniform_(low, high, generator=gen)
    b = torch.empty(shape).uniform_(low, high, generator=gen)
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def make_input(shape, device, dtype, *, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)


def check_against_cpu(testcase, fn, *inputs, atol=1e-3, rtol=1e-3):
    expected = fn(*(t.cpu() for t in inputs))
    actual = fn(*inputs)
    testcase.assertEqual(actual.cpu(), expected, atol=atol, rtol=rtol)


def linear_reference(x, w):
    """F.linear written out as a matmul, for value checks."""
    return x @ w.t()
'''

BINARY = HEADER + '''
from common_demo import make_pair


class TestBinaryUfuncs(TestCase):
    @dtypes(torch.float32)
    def test_add_broadcast(self, device, dtype):
        a, _ = make_pair((4, 1), device, dtype)
        _, b = make_pair((1, 3), device, dtype, seed=1)
        self.assertEqual((a + b).cpu(), a.cpu() + b.cpu())

    @dtypes(torch.float32, torch.float16)
    def test_mul_scalar(self, device, dtype):
        a, _ = make_pair((8,), device, dtype)
        # multiplying by a Python scalar keeps the tensor dtype
        self.assertEqual((a * 3).dtype, dtype)
        self.assertEqual((a * 3).cpu(), a.cpu() * 3)

    @dtypes(torch.float32)
    def test_div_rounding(self, device, dtype):
        a = torch.tensor([7.0, -7.0, 5.5], device=device, dtype=dtype)
        b = torch.tensor([2.0, 2.0, -2.0], device=device, dtype=dtype)
        self.assertEqual(torch.div(a, b, rounding_mode="floor").cpu(), torch.tensor([3.0, -4.0, -3.0]))
        self.assertEqual(torch.div(a, b, rounding_mode="trunc").cpu(), torch.tensor([3.0, -3.0, -2.0]))

    @dtypes(torch.float32)
    def test_maximum_nan(self, device, dtype):
        a = torch.tensor([1.0, float("nan"), 3.0], device=device, dtype=dtype)
        b = torch.tensor([2.0, 0.0, float("nan")], device=device, dtype=dtype)
        self.assertEqual(torch.maximum(a, b).cpu(), torch.tensor([2.0, float("nan"), float("nan")]))

    @dtypes(torch.float32)
    def test_atan2_quadrants(self, device, dtype):
        y = torch.tensor([1.0, 1.0, -1.0, -1.0], device=device, dtype=dtype)
        x = torch.tensor([1.0, -1.0, -1.0, 1.0], device=device, dtype=dtype)
        self.assertEqual(torch.atan2(y, x).cpu(), torch.atan2(y.cpu(), x.cpu()))

    @dtypes(torch.float64)
    def test_pow_float64(self, device, dtype):
        a = torch.tensor([2.0, 3.0], device=device, dtype=dtype)
        self.assertEqual(torch.pow(a, 2).cpu(), torch.tensor([4.0, 9.0], dtype=dtype))


instantiate_device_type_tests(TestBinaryUfuncs, globals())

if __name__ == "__main__":
    run_tests()
'''

UNARY = HEADER + '''
from common_demo import check_against_cpu, make_input


class TestUnaryUfuncs(TestCase):
    @dtypes(torch.float32)
    def test_exp_small(self, device, dtype):
        x = torch.linspace(-1, 1, 9, dtype=dtype).to(device)
        self.assertEqual(torch.exp(x).cpu(), torch.exp(x.cpu()))

    @dtypes(torch.float32)
    def test_neg_values(self, device, dtype):
        x = make_input((5,), device, dtype)
        self.assertEqual((-x).cpu(), -(x.cpu()))

    @dtypes(torch.float32)
    def test_abs_legacy(self, device, dtype):
        x = torch.tensor([-1.0, 0.0, 2.0], device=device, dtype=dtype)
        self.assertEqual(x.abs().cpu(), torch.tensor([1.0, 0.0, 2.0]))

    @dtypes(torch.float64)
    def test_sqrt_values(self, device, dtype):
        x = torch.tensor([4.0, 2.25, 0.0], dtype=dtype).to(device)
        self.assertEqual(torch.sqrt(x).cpu(), torch.tensor([2.0, 1.5, 0.0], dtype=dtype))

    @dtypes(torch.float32)
    def test_sin_cpu_parity(self, device, dtype):
        check_against_cpu(self, torch.sin, make_input((6,), device, dtype))

    @dtypes(torch.float32)
    def test_tanh_cpu_parity(self, device, dtype):
        check_against_cpu(self, torch.tanh, make_input((6,), device, dtype, seed=3))

    @onlyCPU
    @dtypes(torch.float32)
    def test_exp_onlycpu_denormals(self, device, dtype):
        x = torch.tensor([1e-40], dtype=dtype, device=device)
        self.assertGreater(torch.exp(x).item(), 0.0)


instantiate_device_type_tests(TestUnaryUfuncs, globals())

if __name__ == "__main__":
    run_tests()
'''

SHAPE = HEADER + '''
from common_demo import make_input


class TestShapeOps(TestCase):
    @dtypes(torch.float32)
    def test_narrow_basic(self, device, dtype):
        x = make_input((4, 6), device, dtype)
        self.assertEqual(x.narrow(1, 2, 3).cpu(), x.cpu()[:, 2:5])

    @dtypes(torch.float32)
    def test_reshape_roundtrip(self, device, dtype):
        x = make_input((2, 3, 4), device, dtype)
        self.assertEqual(x.reshape(6, 4).reshape(2, 3, 4).cpu(), x.cpu())

    @dtypes(torch.float32)
    def test_transpose_twice(self, device, dtype):
        """Transposing twice gives the original tensor."""
        x = make_input((3, 5), device, dtype)
        self.assertEqual(x.t().t().cpu(), x.cpu())

    @dtypes(torch.float32)
    def test_cat_dim0(self, device, dtype):
        a, b = make_input((2, 3), device, dtype), make_input((1, 3), device, dtype, seed=1)
        self.assertEqual(torch.cat([a, b]).cpu(), torch.cat([a.cpu(), b.cpu()]))

    @onlyCUDA
    def test_flip_cuda_streams(self, device):
        x = torch.arange(4, device=device)
        self.assertEqual(x.flip(0).cpu(), torch.tensor([3, 2, 1, 0]))


class TestViewOps(TestCase):
    @dtypes(torch.float32)
    def test_view_shares_storage(self, device, dtype):
        x = torch.zeros(4, device=device, dtype=dtype)
        v = x.view(2, 2)
        v[0, 0] = 1.0
        self.assertEqual(x[0].item(), 1.0)


instantiate_device_type_tests(TestShapeOps, globals())
instantiate_device_type_tests(TestViewOps, globals())

if __name__ == "__main__":
    run_tests()
'''

REDUCTIONS = HEADER + '''
from common_demo import make_input


def _reference_sum(x, dim, keepdim=False):
    return x.cpu().sum(dim=dim, keepdim=keepdim)


class TestReductions(TestCase):
    @dtypes(torch.float32)
    def test_sum_dim(self, device, dtype):
        x = make_input((3, 4), device, dtype)
        self.assertEqual(x.sum(dim=1).cpu(), _reference_sum(x, 1), atol=1e-3, rtol=1e-3)

    @dtypes(torch.float32)
    def test_sum_keepdim(self, device, dtype):
        x = make_input((3, 4), device, dtype, seed=2)
        self.assertEqual(x.sum(dim=0, keepdim=True).cpu(), _reference_sum(x, 0, keepdim=True), atol=1e-3, rtol=1e-3)

    @dtypes(torch.float64)
    def test_sum_float64_precision(self, device, dtype):
        x = torch.full((1000,), 0.1, dtype=dtype, device=device)
        self.assertEqual(x.sum(dim=0).cpu(), _reference_sum(x, 0))

    @dtypes(torch.float32)
    def test_mean_dim(self, device, dtype):
        x = make_input((2, 5), device, dtype)
        self.assertEqual(x.mean(dim=1).cpu(), x.cpu().mean(dim=1), atol=1e-3, rtol=1e-3)

    @dtypes(torch.float32)
    def test_amax_values(self, device, dtype):
        x = torch.tensor([[1.0, 5.0], [7.0, -2.0]], device=device, dtype=dtype)
        self.assertEqual(x.amax(dim=1).cpu(), torch.tensor([5.0, 7.0]))


instantiate_device_type_tests(TestReductions, globals())

if __name__ == "__main__":
    run_tests()
'''

LINALG = HEADER + '''
from common_demo import make_input


class TestMatmul(TestCase):
    @dtypes(torch.float32)
    def test_matmul_2d(self, device, dtype):
        a, b = make_input((4, 8), device, dtype), make_input((8, 3), device, dtype, seed=1)
        self.assertEqual((a @ b).cpu(), a.cpu() @ b.cpu(), atol=1e-2, rtol=1e-2)

    @dtypes(torch.float32)
    def test_mm_identity(self, device, dtype):
        a = make_input((5, 5), device, dtype)
        eye = torch.eye(5, dtype=dtype).to(device)
        self.assertEqual(torch.mm(a, eye).cpu(), a.cpu(), atol=1e-3, rtol=1e-3)

    @dtypes(torch.float32)
    def test_matmul_batched(self, device, dtype):
        a, b = make_input((2, 3, 4), device, dtype), make_input((2, 4, 2), device, dtype, seed=1)
        self.assertEqual(torch.matmul(a, b).cpu(), torch.matmul(a.cpu(), b.cpu()), atol=1e-2, rtol=1e-2)


class TestLinalgMisc(TestCase):
    @dtypes(torch.float32)
    def test_dot_basic(self, device, dtype):
        a = torch.tensor([1.0, 2.0, 3.0], device=device, dtype=dtype)
        self.assertEqual(torch.dot(a, a).item(), 14.0)

    @dtypes(torch.float32)
    def test_outer(self, device, dtype):
        a = torch.tensor([1.0, 2.0], device=device, dtype=dtype)
        self.assertEqual(torch.outer(a, a).cpu(), torch.tensor([[1.0, 2.0], [2.0, 4.0]]))


instantiate_device_type_tests(TestMatmul, globals())
instantiate_device_type_tests(TestLinalgMisc, globals())

if __name__ == "__main__":
    run_tests()
'''

INDEX_OPS = HEADER + '''

class TestIndexing(TestCase):
    @dtypes(torch.float32)
    def test_index_select_basic(self, device, dtype):
        x = torch.arange(12, dtype=dtype).reshape(3, 4).to(device)
        idx = torch.tensor([2, 0]).to(device)
        self.assertEqual(x.index_select(0, idx).cpu(), x.cpu()[[2, 0]])

    @dtypes(torch.float32)
    def test_gather_rows(self, device, dtype):
        x = torch.arange(6, dtype=dtype).reshape(2, 3).to(device)
        idx = torch.tensor([[0, 2], [1, 0]]).to(device)
        self.assertEqual(torch.gather(x, 1, idx).cpu(), torch.gather(x.cpu(), 1, idx.cpu()))


instantiate_device_type_tests(TestIndexing, globals())

if __name__ == "__main__":
    run_tests()
'''

OPS = '''\
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

DEMO_OPS = ("add", "mul", "sub", "abs", "neg", "exp", "addcmul", "logaddexp", "softmax", "clamp",
            "maximum", "where", "true_divide")


def _to(sample, device):
    # samples are made on CPU (random fill happens there) and then moved
    return sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)


class TestCommonDemo(TestCase):
    @ops([op for op in op_db if op.name in DEMO_OPS], allowed_dtypes=(torch.float32,))
    def test_matches_reference(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = _to(cpu, device)
            actual = op(sample.input, *sample.args, **sample.kwargs)
            expected = op(cpu.input, *cpu.args, **cpu.kwargs)
            self.assertEqual(actual.cpu(), expected, atol=1e-3, rtol=1e-3)

    @ops([op for op in op_db if op.name in DEMO_OPS], allowed_dtypes=(torch.float32,))
    def test_out_shape(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = _to(cpu, device)
            result = op(sample.input, *sample.args, **sample.kwargs)
            self.assertEqual(result.device.type, torch.device(device).type)
            self.assertEqual(result.shape, op(cpu.input, *cpu.args, **cpu.kwargs).shape)


instantiate_device_type_tests(TestCommonDemo, globals())

if __name__ == "__main__":
    run_tests()
'''

OPS_FULL = '''\
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests


class TestCommonFull(TestCase):
    """Every OpInfo in the installed op_db, float32 only: the wide end of the demo suite."""

    @ops(op_db, allowed_dtypes=(torch.float32,))
    def test_runs_on_device(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = cpu.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)
            op(sample.input, *sample.args, **sample.kwargs)
            break

    @ops(op_db, allowed_dtypes=(torch.float32,))
    def test_result_on_device(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = cpu.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)
            result = op(sample.input, *sample.args, **sample.kwargs)
            if isinstance(result, torch.Tensor):
                self.assertEqual(result.device.type, torch.device(device).type)
            break


instantiate_device_type_tests(TestCommonFull, globals())

if __name__ == "__main__":
    run_tests()
'''

UNARY_OPINFO = '''\
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import unary_ufuncs
from torch.testing._internal.common_utils import TestCase, run_tests


class TestUnaryOpInfo(TestCase):
    @ops(unary_ufuncs, allowed_dtypes=(torch.float32,))
    def test_first_sample_runs(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            op(sample.input, *sample.args, **sample.kwargs)
            break

    @ops(unary_ufuncs, allowed_dtypes=(torch.float32,))
    def test_preserves_shape(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            result = op(sample.input, *sample.args, **sample.kwargs)
            first = result[0] if isinstance(result, (tuple, list)) else result
            self.assertEqual(first.shape, sample.input.shape)
            break


instantiate_device_type_tests(TestUnaryOpInfo, globals())

if __name__ == "__main__":
    run_tests()
'''

MODULES = '''\
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase, run_tests


class TestModuleDemo(TestCase):
    @modules(module_db, allowed_dtypes=(torch.float32,))
    def test_construct_on_device(self, device, dtype, module_info, training):
        inputs = module_info.module_inputs_func(module_info, device=device, dtype=dtype,
                                                requires_grad=False, training=training)
        for module_input in inputs[:1]:
            args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
            module_info.module_cls(*args, **kwargs)


instantiate_device_type_tests(TestModuleDemo, globals())

if __name__ == "__main__":
    run_tests()
'''

NN = HEADER + '''
import torch.nn.functional as F

from common_demo import linear_reference, make_input


class TestNNDemo(TestCase):
    @dtypes(torch.float32)
    def test_relu_values(self, device, dtype):
        x = torch.tensor([-1.0, 0.0, 2.0], device=device, dtype=dtype)
        self.assertEqual(F.relu(x).cpu(), torch.tensor([0.0, 0.0, 2.0]))

    @dtypes(torch.float32)
    def test_softmax_rows_sum_to_one(self, device, dtype):
        x = make_input((3, 4), device, dtype)
        self.assertEqual(F.softmax(x, dim=1).sum(dim=1).cpu(), torch.ones(3), atol=1e-3, rtol=1e-3)

    @dtypes(torch.float32)
    def test_linear_shapes(self, device, dtype):
        x = make_input((2, 4), device, dtype)
        w = make_input((3, 4), device, dtype, seed=1)
        self.assertEqual(F.linear(x, w).shape, (2, 3))

    @dtypes(torch.float32)
    def test_linear_matches_reference(self, device, dtype):
        x = make_input((2, 4), device, dtype)
        w = make_input((3, 4), device, dtype, seed=1)
        self.assertEqual(F.linear(x, w).cpu(), linear_reference(x, w).cpu(), atol=1e-3, rtol=1e-3)


instantiate_device_type_tests(TestNNDemo, globals())

if __name__ == "__main__":
    run_tests()
'''

TORCH = HEADER + '''

class TestTorchDeviceType(TestCase):
    @dtypes(torch.float32)
    def test_tensor_basics(self, device, dtype):
        x = torch.ones(2, 3, device=device, dtype=dtype)
        self.assertEqual(x.shape, (2, 3))
        self.assertEqual(x.cpu(), torch.ones(2, 3))

    @dtypes(torch.float32, torch.int64)
    def test_zeros_like(self, device, dtype):
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual(torch.zeros_like(x).cpu(), torch.zeros(3, dtype=dtype))

    @dtypes(torch.float32)
    def test_clone_contiguous(self, device, dtype):
        x = torch.arange(6, dtype=dtype).reshape(2, 3).to(device).t()
        self.assertTrue(x.clone(memory_format=torch.contiguous_format).is_contiguous())

    @dtypes(torch.float32, torch.int32)
    def test_to_cpu_roundtrip(self, device, dtype):
        x = torch.arange(5, dtype=dtype)
        self.assertEqual(x.to(device).cpu(), x)


instantiate_device_type_tests(TestTorchDeviceType, globals())

if __name__ == "__main__":
    run_tests()
'''

TEST_FILES = {
    "test/common_demo.py": COMMON_DEMO,
    "test/test_binary_ufuncs.py": BINARY,
    "test/test_unary_ufuncs.py": UNARY,
    "test/test_shape_ops.py": SHAPE,
    "test/test_reductions.py": REDUCTIONS,
    "test/test_linalg.py": LINALG,
    "test/test_index_ops.py": INDEX_OPS,
    "test/test_ops.py": OPS,
    "test/test_ops_full.py": OPS_FULL,
    "test/test_modules.py": MODULES,
    "test/test_unary_opinfo.py": UNARY_OPINFO,
    "test/test_nn.py": NN,
    "test/test_torch.py": TORCH,
}

# Files no v2.14 change touches: --scale N adds N-1 renamed copies of each.
SCALABLE = ("test/test_torch.py", "test/test_modules.py", "test/test_unary_opinfo.py")
