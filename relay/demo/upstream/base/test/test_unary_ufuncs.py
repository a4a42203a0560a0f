import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests

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
