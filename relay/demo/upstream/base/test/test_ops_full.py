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
