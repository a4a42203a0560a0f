import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests

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
