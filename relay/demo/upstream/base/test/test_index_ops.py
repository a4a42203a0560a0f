import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests


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
