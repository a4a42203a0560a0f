import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests

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
