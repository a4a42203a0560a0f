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
