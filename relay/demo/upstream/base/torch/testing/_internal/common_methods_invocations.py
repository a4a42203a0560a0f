"""OpInfo-style definitions of the demo upstream (read by the selector's AST scan, never imported)."""
from functools import partial

from torch.testing._internal.opinfo.core import (
    BinaryUfuncInfo,
    OpInfo,
    ReductionOpInfo,
    SampleInput,
    UnaryUfuncInfo,
)
from torch.testing._internal.opinfo.definitions.linalg import op_db as linalg_op_db
from torch.testing._internal.opinfo.definitions.nn import op_db as nn_op_db


def sample_inputs_binary(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((4, 4)), args=(make((4, 4)),))
    yield SampleInput(make((4, 1)), args=(make((1, 4)),))


def sample_inputs_mul(op_info, device, dtype, requires_grad, **kwargs):
    yield from sample_inputs_binary(op_info, device, dtype, requires_grad)
    yield SampleInput(make_tensor((3,), device=device, dtype=dtype), args=(2.5,))


def sample_inputs_addcmul(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((3, 3)), args=(make((3, 3)), make((3, 3))))


def sample_inputs_clamp(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((5,)), kwargs={"min": -0.5, "max": 0.5})


op_db = [
    BinaryUfuncInfo("add", sample_inputs_func=sample_inputs_binary, supports_out=True),
    BinaryUfuncInfo("mul", sample_inputs_func=sample_inputs_mul, supports_out=True),
    BinaryUfuncInfo("sub", sample_inputs_func=sample_inputs_binary, supports_out=True),
    BinaryUfuncInfo("true_divide", sample_inputs_func=sample_inputs_binary, supports_out=True),
    BinaryUfuncInfo("maximum", sample_inputs_func=sample_inputs_binary),
    UnaryUfuncInfo("abs", supports_forward_ad=True),
    UnaryUfuncInfo("neg", supports_forward_ad=True),
    UnaryUfuncInfo("exp", supports_forward_ad=True),
    OpInfo("addcmul", sample_inputs_func=sample_inputs_addcmul),
    OpInfo("clamp", sample_inputs_func=sample_inputs_clamp),
    OpInfo("where", supports_out=False),
    ReductionOpInfo("sum", identity=0, supports_out=False),
] + linalg_op_db + nn_op_db
