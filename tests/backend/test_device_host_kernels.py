"""The host fallback's directly called CPU kernels (backend/csrc/host_kernels.cpp): each op, with
the argument forms the boxed path handles, gives the CPU's results bit for bit, and out= tensors
of the wrong size are resized on the device as the CPU resizes them."""

import pytest
import torch
import torch.nn.functional as F


def _both(*shape, seed=0):
    cpu = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    return cpu, cpu.to("spyre")


def _same(spyre, cpu):
    assert spyre.device.type == "spyre"
    assert spyre.shape == cpu.shape and spyre.dtype == cpu.dtype and spyre.stride() == cpu.stride()
    assert torch.equal(spyre.cpu(), cpu)


@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"dim": 0, "dtype": torch.float32}])
def test_sum_matches_the_cpu(kwargs):
    cpu, _ = _both(3, 5, 7)
    cpu = cpu.half() if "dtype" in kwargs else cpu
    x = cpu.to("spyre")
    _same(torch.sum(x, **kwargs), torch.sum(cpu, **kwargs))


def test_sub_with_alpha_broadcasting_and_a_resized_out():
    a_cpu, a = _both(4, 6)
    b_cpu, b = _both(6, seed=1)
    out_cpu, out = torch.empty(1), torch.empty(1, device="spyre")
    torch.sub(a, b, alpha=0.25, out=out)
    torch.sub(a_cpu, b_cpu, alpha=0.25, out=out_cpu)
    _same(out, out_cpu)
    a.sub_(b, alpha=3)
    a_cpu.sub_(b_cpu, alpha=3)
    _same(a, a_cpu)


def test_relu_threshold_backward_and_fill_on_strided_tensors():
    cpu, x = _both(6, 8)
    cpu, x = cpu.t().requires_grad_(), x.t().requires_grad_()
    F.relu(x).sum().backward()
    F.relu(cpu).sum().backward()
    _same(F.relu(x.detach()), F.relu(cpu.detach()))
    _same(x.grad, cpu.grad)
    _same(x.detach().fill_(2), cpu.detach().fill_(2))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_weights_and_ignore_index_forward_and_backward(reduction):
    cpu, x = _both(9, 5)
    cpu, x = cpu.requires_grad_(), x.requires_grad_()
    target_cpu = torch.tensor([0, 4, 2, 2, 1, 3, 0, 4, 1])
    weight_cpu = torch.linspace(0.5, 2.0, 5)
    kwargs = {"reduction": reduction, "ignore_index": 2}
    loss = F.cross_entropy(x, target_cpu.to("spyre"), weight=weight_cpu.to("spyre"), **kwargs)
    expected = F.cross_entropy(cpu, target_cpu, weight=weight_cpu, **kwargs)
    _same(loss.detach(), expected.detach())
    loss.sum().backward()
    expected.sum().backward()
    _same(x.grad, cpu.grad)
