import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests

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
