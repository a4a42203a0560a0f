"""The op-hooks contract the simulator builds on (spyre_device.hooks)."""

import pytest
import torch

from spyre_device import hooks
from tests.backend.device_helpers import bare_device  # noqa: F401  (fixture)


class Recorder:
    def __init__(self, replace=None, refuse=()):
        self.before, self.after = [], []
        self.replace = replace or {}
        self.refuse = set(refuse)

    def before_op(self, op, args, kwargs):
        self.before.append(op)
        if op.overloadpacket in self.refuse:
            raise NotImplementedError(f"{op} is not supported on spyre")
        return self.replace.get(op.overloadpacket)

    def after_op(self, op, args, kwargs, outputs, host_seconds):
        self.after.append((op, args, outputs, host_seconds))


@pytest.fixture
def recorder(bare_device):
    made = []

    def make(**options):
        r = Recorder(**options)
        hooks.register_op_hooks(r)
        made.append(r)
        return r

    yield make
    for r in made:
        hooks.unregister_op_hooks(r)


def test_every_fallback_op_is_reported_with_spyre_arguments_and_outputs(recorder, bare_device):
    x = torch.ones(3, device=bare_device)
    rec = recorder()
    y = (x * 2).sum()
    # Structured ops reach a backend without its own kernel as their out= overload.
    assert rec.before == [torch.ops.aten.mul.out, torch.ops.aten.sum.IntList_out]
    op, args, outputs, seconds = rec.after[0]
    assert op is torch.ops.aten.mul.out
    assert args[0] is x and outputs.device == bare_device
    assert seconds >= 0.0
    assert rec.after[1][2] is y


def test_minimal_kernels_do_not_call_hooks(recorder, bare_device):
    rec = recorder()
    x = torch.empty(4, device=bare_device)
    x.view(2, 2).t()
    x.copy_(torch.ones(4))
    assert rec.before == [] and rec.after == []


def test_before_op_can_refuse_an_op(recorder, bare_device):
    x = torch.ones(2, device=bare_device)
    recorder(refuse={torch.ops.aten.cos})
    with pytest.raises(NotImplementedError, match="aten.cos.out is not supported on spyre"):
        torch.cos(x)
    assert torch.sin(x).device == bare_device


def test_before_op_can_substitute_a_host_implementation(recorder, bare_device):
    seen = []

    def cube_by_multiplying(x, exponent, *, out):
        seen.append((x.device.type, exponent))
        return torch.mul(x * x, x, out=out)

    recorder(replace={torch.ops.aten.pow: cube_by_multiplying})
    x = torch.tensor([1.0, 2.0, 3.0], device=bare_device)
    result = x.pow(3)
    assert seen == [("cpu", 3)]
    assert result.device == bare_device and result.tolist() == [1.0, 8.0, 27.0]


def test_hooks_run_in_registration_order_and_do_not_recurse(recorder, bare_device):
    order = []

    class Nested:
        def before_op(self, op, args, kwargs):
            order.append(("nested", op))
            torch.ones(1, device=bare_device).neg()  # a spyre op inside a hook
            return None

        def after_op(self, *args):
            order.append(("nested-after",))

    x = torch.ones(2, device=bare_device)
    first = recorder()
    nested = Nested()
    hooks.register_op_hooks(nested)
    try:
        x.abs()
    finally:
        hooks.unregister_op_hooks(nested)
    assert first.before == [torch.ops.aten.abs.out]  # the hook's own neg() is not reported
    assert order == [("nested", torch.ops.aten.abs.out), ("nested-after",)]


def test_registration_is_idempotent_and_validated():
    class NoHooks:
        pass

    with pytest.raises(TypeError, match="must have a callable before_op"):
        hooks.register_op_hooks(NoHooks())
    rec = Recorder()
    hooks.register_op_hooks(rec)
    hooks.register_op_hooks(rec)
    try:
        assert [h for h in hooks.registered_op_hooks() if h is rec] == [rec]
    finally:
        hooks.unregister_op_hooks(rec)
    assert rec not in hooks.registered_op_hooks()
    hooks.unregister_op_hooks(rec)  # unknown objects are ignored
