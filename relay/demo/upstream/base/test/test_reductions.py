import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests

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
