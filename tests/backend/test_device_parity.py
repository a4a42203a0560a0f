"""OpenReg parity: autocast, torch.accelerator memory APIs, device random integers, index
assignment, and backward through every op whose forward runs (docs/backend.md, "OpenReg parity")."""

import pytest
import torch
import torch.nn.functional as F

sim = torch.spyre.sim


def _pair(*shape, seed=0, dtype=torch.float32):
    cpu = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
    return cpu, cpu.to("spyre")


# ---- autocast --------------------------------------------------------------------------------


def test_autocast_is_available_with_the_devices_dtypes():
    assert torch.amp.is_autocast_available("spyre")
    assert torch.spyre.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_runs_matmul_in_lower_precision_like_the_cpu(dtype):
    a_cpu, a = _pair(8, 70)
    b_cpu, b = _pair(70, 5, seed=1)
    with torch.autocast("spyre", dtype=dtype):
        out = a @ b
        linear = F.linear(a, b.t())
    with torch.autocast("cpu", dtype=dtype):
        expected = a_cpu @ b_cpu
    assert out.device.type == "spyre" and out.dtype == dtype and linear.dtype == dtype
    torch.testing.assert_close(out.cpu(), expected, rtol=2e-2, atol=2e-2)


def test_autocast_keeps_precision_sensitive_ops_in_fp32():
    _, x = _pair(4, 16, dtype=torch.bfloat16)
    with torch.autocast("spyre", dtype=torch.bfloat16):
        assert torch.exp(x).dtype == torch.float32  # fp32 policy
        assert x.sum().dtype == torch.float32  # fp32_set_opt_dtype: reductions accumulate in fp32
        assert torch.softmax(x, dim=-1).dtype == torch.float32
        assert torch.addcmul(x, x.float(), x).dtype == torch.float32  # promote to the widest input
        assert (x + x).dtype == torch.bfloat16  # not listed: untouched
    with pytest.raises(RuntimeError, match="unsafe to autocast on spyre"):
        with torch.autocast("spyre", dtype=torch.bfloat16):
            F.binary_cross_entropy(torch.rand(3).to("spyre"), torch.rand(3).to("spyre"))


def test_autocast_training_step_gives_fp32_gradients():
    w_cpu, _ = _pair(16, 8)
    w = w_cpu.to("spyre").requires_grad_()
    _, x = _pair(4, 16, seed=2)
    with torch.autocast("spyre", dtype=torch.bfloat16):
        loss = (x @ w).float().pow(2).mean()
    loss.backward()
    assert w.grad.dtype == torch.float32 and w.grad.device.type == "spyre"
    assert torch.isfinite(w.grad.cpu()).all()


def test_autocast_off_leaves_dtypes_alone():
    _, a = _pair(4, 4)
    with torch.autocast("spyre", dtype=torch.bfloat16, enabled=False):
        assert (a @ a).dtype == torch.float32


# ---- torch.accelerator memory APIs -----------------------------------------------------------


def test_accelerator_is_spyre():
    assert torch.accelerator.current_accelerator().type == "spyre"


def test_accelerator_memory_apis_follow_the_allocator():
    before = torch.accelerator.memory_allocated()
    assert before == torch.spyre.memory_allocated()
    torch.accelerator.reset_peak_memory_stats()
    x = torch.empty(3, 10, dtype=torch.float16, device="spyre")  # 3 rows of 20 bytes -> 3 sticks
    assert torch.accelerator.memory_allocated() - before == 3 * 128
    assert torch.accelerator.max_memory_allocated() >= before + 3 * 128
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.spyre.memory_allocated()
    assert stats["requested_bytes.all.current"] == torch.spyre.memory_stats()["requested_bytes.all.current"]
    assert stats["allocation.all.current"] >= 1
    free, total = torch.accelerator.get_memory_info()
    assert total == torch.spyre.memory_capacity()
    assert free == total - torch.spyre.memory_reserved()  # cached blocks are held, as on CUDA
    del x
    assert torch.accelerator.memory_allocated() == before
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == before
    torch.accelerator.empty_cache()
    assert torch.spyre.memory_stats()["cached_bytes.all.current"] == 0


def test_accelerator_reset_accumulated_stats():
    torch.empty(100, device="spyre")
    assert torch.accelerator.memory_stats()["allocation.all.allocated"] > 0
    torch.accelerator.reset_accumulated_memory_stats()
    stats = torch.accelerator.memory_stats()
    assert stats["allocation.all.allocated"] == 0 and stats["allocated_bytes.all.freed"] == 0


# ---- random integers on the device -----------------------------------------------------------


def test_random_integers_are_generated_on_the_device_and_are_reproducible():
    torch.manual_seed(7)
    a = torch.randint(3, 10, (1000,), dtype=torch.int32, device="spyre")
    torch.manual_seed(7)
    b = torch.randint(3, 10, (1000,), dtype=torch.int32, device="spyre")
    assert a.device.type == "spyre" and torch.equal(a.cpu(), b.cpu())
    values = a.cpu()
    assert values.min() >= 3 and values.max() <= 9 and len(values.unique()) == 7
    with sim.capture() as cap:
        torch.empty(16, dtype=torch.int32, device="spyre").random_(0, 4)
        torch.empty(16, device="spyre").random_(5)
    assert any(op.startswith("aten::random_.") for op in cap.result["ops"])
    assert cap.result["unsupported_ops"] == 0 and cap.result["fallback_ops"] == 0


def test_make_tensor_builds_integer_tensors_on_spyre():
    from torch.testing import make_tensor

    t = make_tensor((5, 5), dtype=torch.int32, device="spyre", low=-4, high=4)
    assert t.device.type == "spyre" and t.cpu().abs().max() <= 4


# ---- index assignment ------------------------------------------------------------------------


def test_index_assignment_matches_the_cpu():
    x_cpu, x = _pair(6, 5)
    idx = torch.tensor([0, 3, 5])
    x_cpu[idx] = 1.5
    x[idx.to("spyre")] = 1.5
    mask = x_cpu > 0.5
    x_cpu[mask] = -x_cpu[mask]
    x[mask.to("spyre")] = -x[mask.to("spyre")]
    torch.testing.assert_close(x.cpu(), x_cpu)
    with sim.capture() as cap:
        x.index_put_((idx.to("spyre"),), torch.ones(5).to("spyre"), accumulate=True)
    x_cpu.index_put_((idx,), torch.ones(5), accumulate=True)
    torch.testing.assert_close(x.cpu(), x_cpu)
    assert "aten::_index_put_impl_.default" in cap.result["ops"]
    assert cap.result["unsupported_ops"] == 0


# ---- backward of every op whose forward runs --------------------------------------------------

BACKWARD_CASES = {
    "abs": lambda x: x.abs(),
    "l1_loss": lambda x: F.l1_loss(x, torch.zeros_like(x)),
    "__getitem__": lambda x: x[torch.tensor([0, 2, 2], device=x.device)],
    "getitem_mask": lambda x: x[x > 0],
    "sgn": lambda x: torch.sgn(x) * x,
    "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, torch.zeros_like(x)),
    "huber_loss": lambda x: F.huber_loss(x, torch.zeros_like(x)),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "group_norm": lambda x: F.group_norm(x.reshape(2, 4, -1), 2),
    "index_put": lambda x: x.index_put((torch.tensor([1], device=x.device),), x[0] * 2),
    "take_along_dim": lambda x: torch.take_along_dim(x, torch.tensor([[0], [1], [0], [2]], device=x.device), 1),
}


@pytest.mark.parametrize("name", sorted(BACKWARD_CASES))
def test_backward_matches_the_cpu(name):
    fn = BACKWARD_CASES[name]
    x_cpu = torch.randn(4, 6, generator=torch.Generator().manual_seed(3)).requires_grad_()
    x = x_cpu.detach().to("spyre").requires_grad_()
    with sim.precision(False):
        fn(x).sum().backward()
    fn(x_cpu).sum().backward()
    assert x.grad.device.type == "spyre"
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, rtol=1e-4, atol=1e-5)


# ---- composite paths compute as the CPU does ---------------------------------------------------


def _lce(x, w, target):
    options = torch.nn.LinearCrossEntropyOptions() if hasattr(torch.nn, "LinearCrossEntropyOptions") else None
    if options is None:
        return F.linear_cross_entropy(x, w, target)
    return F.linear_cross_entropy(x, w, target, options=options)


NUMERIC_CASES = {
    # PyTorch's generic composites for these compute in bf16 where the CPU accumulates in fp32.
    "addr_bf16": (torch.bfloat16, lambda t, g: torch.addr(t(4, 5), t(4), t(5))),
    "group_norm_bf16": (torch.bfloat16, lambda t, g: F.group_norm(t(2, 6, 7) * 50 + 3, 3)),
    "native_group_norm_bf16": (torch.bfloat16, lambda t, g: torch.native_group_norm(
        t(2, 6, 7) * 50 + 3, None, None, 2, 6, 7, 3, 1e-5)[0]),
    "layer_norm_bf16": (torch.bfloat16, lambda t, g: F.layer_norm(t(3, 40) * 50 + 3, (40,))),
    "layer_norm_fp32_one_element": (torch.float32, lambda t, g: F.layer_norm(t(1) * 3, (1,), t(1), t(1))),
    # PyTorch picks its accumulation dtype per device type: spyre gets the CPU's (fp32).
    "linear_cross_entropy_bf16": (torch.bfloat16, lambda t, g: _lce(
        t(8, 32), t(50, 32), torch.randint(0, 50, (8,), generator=g).to(t(1).device))),
}


@pytest.mark.parametrize("name", sorted(NUMERIC_CASES))
def test_composite_paths_match_the_cpu_bit_for_bit(name):
    dtype, fn = NUMERIC_CASES[name]

    def run(device):
        gen = torch.Generator().manual_seed(5)
        return fn(lambda *shape: torch.randn(*shape, generator=gen).to(dtype).to(device), torch.Generator().manual_seed(6))

    with sim.precision(False):  # the matmul policy is the documented difference; everything else is exact
        actual = run("spyre")
    expected = run("cpu")
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


def test_layer_norm_is_costed_as_the_native_op_it_is():
    _, x = _pair(4, 96)
    with sim.capture() as cap:
        F.layer_norm(x, (96,))
    assert cap.result["ops"]["aten::native_layer_norm.default"]["status"] == "native"
    assert cap.result["fallback_ops"] == 0 and not any("batch_norm" in op for op in cap.result["ops"])
