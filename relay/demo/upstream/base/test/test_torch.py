import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCPU,
    onlyCUDA,
)
from torch.testing._internal.common_utils import TestCase, run_tests


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
