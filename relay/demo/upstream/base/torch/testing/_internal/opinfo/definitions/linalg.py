"""Linear-algebra OpInfo entries of the demo upstream."""
from torch.testing._internal.opinfo.core import OpInfo


def sample_inputs_matmul(op_info, device, dtype, requires_grad, **kwargs):
    yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype), args=(make_tensor((4, 2), device=device, dtype=dtype),))


op_db = [
    OpInfo("matmul", sample_inputs_func=sample_inputs_matmul, supports_out=False),
    OpInfo("mm", sample_inputs_func=sample_inputs_matmul, supports_out=True),
]
