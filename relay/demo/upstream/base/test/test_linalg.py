import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests

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
