"""torch.nn.functional OpInfo entries of the demo upstream."""
from torch.testing._internal.opinfo.core import OpInfo, UnaryUfuncInfo


def sample_inputs_softmax(op_info, device, dtype, requires_grad, with_dtype=False, **kwargs):
    kwargs = {"dtype": dtype} if with_dtype else {}
    yield SampleInput(make_tensor((3, 5), device=device, dtype=dtype), args=(1,), kwargs=kwargs)


op_db = [
    OpInfo("softmax", sample_inputs_func=sample_inputs_softmax, supports_out=False),
    OpInfo("softmax", variant_test_name="with_dtype", sample_inputs_func=sample_inputs_softmax,
           supports_out=False),
    UnaryUfuncInfo("nn.functional.relu", supports_forward_ad=True),
]
