import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

DEMO_OPS = ("add", "mul", "sub", "abs", "neg", "exp", "addcmul", "logaddexp", "softmax", "clamp",
            "maximum", "where", "true_divide")


def _to(sample, device):
    # samples are made on CPU (random fill happens there) and then moved
    return sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)


class TestCommonDemo(TestCase):
    @ops([op for op in op_db if op.name in DEMO_OPS], allowed_dtypes=(torch.float32,))
    def test_matches_reference(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = _to(cpu, device)
            actual = op(sample.input, *sample.args, **sample.kwargs)
            expected = op(cpu.input, *cpu.args, **cpu.kwargs)
            self.assertEqual(actual.cpu(), expected, atol=1e-3, rtol=1e-3)

    @ops([op for op in op_db if op.name in DEMO_OPS], allowed_dtypes=(torch.float32,))
    def test_out_shape(self, device, dtype, op):
        for cpu in op.sample_inputs("cpu", dtype):
            sample = _to(cpu, device)
            result = op(sample.input, *sample.args, **sample.kwargs)
            self.assertEqual(result.device.type, torch.device(device).type)
            self.assertEqual(result.shape, op(cpu.input, *cpu.args, **cpu.kwargs).shape)


instantiate_device_type_tests(TestCommonDemo, globals())

if __name__ == "__main__":
    run_tests()
