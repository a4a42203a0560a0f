"""The host fallback and the minimal kernels: aliasing, in-place, out=, mixed devices,
random reproducibility, autograd, serialization, transfer counters."""

import io
import threading

import pytest
import torch

from tests.backend.device_helpers import bare_device  # noqa: F401  (fixture)


def test_arithmetic_matches_cpu(bare_device):
    a = torch.randn(4, 5)
    b = torch.randn(5, 3)
    got = (a.to(bare_device) @ b.to(bare_device)).relu().sum(dim=1)
    assert got.device == bare_device
    torch.testing.assert_close(got.cpu(), (a @ b).relu().sum(dim=1))


def test_views_alias_their_base(bare_device):
    x = torch.arange(12.0, device=bare_device).view(3, 4)
    t = x.t()
    t[1, 0] = 100.0  # as_strided kernel
    assert x[0, 1].item() == 100.0
    u = x.unfold(1, 2, 1)  # a view made by a host kernel, mapped back onto x's storage
    assert u.device == bare_device and u.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    u[2, 0, 0] = -5.0
    assert x[2, 0].item() == -5.0
    d = x.diagonal()
    d.zero_()
    assert x[1, 1].item() == 0.0 and x[2, 2].item() == 0.0
    base = torch.zeros(4, device=bare_device)
    assert base.view(2, 2)._base is base and base[1:]._base is base


def test_in_place_ops_return_the_same_tensor(bare_device):
    x = torch.ones(3, device=bare_device)
    result = x.mul_(4)
    assert result is x
    assert x.tolist() == [4.0, 4.0, 4.0]


def test_out_argument_is_resized_and_written(bare_device):
    x = torch.arange(6.0, device=bare_device).view(2, 3)
    out = torch.empty(0, device=bare_device)
    result = torch.add(x, x, out=out)
    assert result is out
    assert out.shape == (2, 3) and out.device == bare_device
    assert out.cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    same_size = torch.empty(2, 3, device=bare_device)
    ptr = same_size.data_ptr()
    torch.mul(x, 2, out=same_size)
    assert same_size.data_ptr() == ptr and torch.equal(same_size.cpu(), out.cpu())


def test_mixed_devices_raise_like_pytorch(bare_device):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two devices, spyre:0 and cpu"):
        torch.ones(3, device=bare_device) + torch.ones(3)
    # A CPU zero-dim tensor is a scalar, as on CUDA.
    assert (torch.ones(3, device=bare_device) + torch.tensor(2.0)).tolist() == [3.0, 3.0, 3.0]
    # CPU indices are accepted by indexing, as on CUDA.
    assert torch.arange(5.0, device=bare_device)[torch.tensor([4, 0])].tolist() == [4.0, 0.0]


def test_factories_and_dtype_conversions(bare_device):
    assert torch.zeros(2, 3, device=bare_device).sum().item() == 0.0
    assert torch.full((2,), 3, dtype=torch.int32, device=bare_device).tolist() == [3, 3]
    assert torch.randperm(5, device=bare_device).sort().values.tolist() == [0, 1, 2, 3, 4]
    h = torch.arange(4, device=bare_device).to(torch.float16)
    assert h.dtype == torch.float16 and h.device == bare_device


def test_manual_seed_makes_random_ops_reproducible(bare_device):
    torch.manual_seed(1234)
    a = torch.randn(8, device=bare_device)
    torch.manual_seed(1234)
    b = torch.randn(8, device=bare_device)
    assert torch.equal(a.cpu(), b.cpu())
    torch.spyre.manual_seed(99)
    c = torch.rand(8, device=bare_device)
    d = torch.rand(8, device=bare_device)
    torch.spyre.manual_seed(99)
    assert torch.equal(c.cpu(), torch.rand(8, device=bare_device).cpu())
    assert not torch.equal(c.cpu(), d.cpu())
    assert torch.spyre.initial_seed() == 99


def test_spyre_seed_is_independent_of_the_cpu_generator(bare_device):
    torch.spyre.manual_seed(7)
    first = torch.randn(4, device=bare_device)
    torch.spyre.manual_seed(7)
    torch.randn(100)  # consuming CPU randomness must not shift the spyre stream
    assert torch.equal(first.cpu(), torch.randn(4, device=bare_device).cpu())


def test_explicit_spyre_generator(bare_device):
    g = torch.Generator(device=bare_device)
    assert g.device == bare_device
    g.manual_seed(5)
    a = torch.randn(4, device=bare_device, generator=g)
    g.manual_seed(5)
    assert torch.equal(a.cpu(), torch.randn(4, device=bare_device, generator=g).cpu())
    state = torch.spyre.get_rng_state()
    x = torch.rand(3, device=bare_device)
    torch.spyre.set_rng_state(state)
    assert torch.equal(x.cpu(), torch.rand(3, device=bare_device).cpu())


def test_autograd_runs_on_spyre(bare_device):
    w = torch.randn(3, 4, device=bare_device, requires_grad=True)
    x = torch.randn(5, 3, device=bare_device)
    loss = (x @ w).tanh().pow(2).sum()
    loss.backward()
    assert w.grad is not None and w.grad.device == bare_device
    w_cpu = w.detach().cpu().requires_grad_()
    (x.cpu() @ w_cpu).tanh().pow(2).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), w_cpu.grad)


class _RecordThread(torch.autograd.Function):
    """Identity whose backward notes the thread it ran on and whether multithreading was on."""

    seen: list = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        _RecordThread.seen.append((threading.get_ident(), torch.autograd.is_multithreading_enabled()))
        return grad


def test_backward_of_a_spyre_graph_runs_on_the_calling_thread(bare_device):
    x = torch.randn(4, device=bare_device, requires_grad=True)
    _RecordThread.seen.clear()
    _RecordThread.apply(x * 2).sum().backward()
    (grad,) = torch.autograd.grad(_RecordThread.apply(x).sum(), x)  # torch.autograd.grad too

    from_thread = {}
    worker = threading.Thread(target=lambda: from_thread.update(grad=torch.autograd.grad(
        _RecordThread.apply(x * 3).sum(), x)[0]))
    worker.start()
    worker.join()

    main = threading.get_ident()
    assert _RecordThread.seen == [(main, False), (main, False), (worker.ident, False)]
    assert torch.autograd.is_multithreading_enabled()  # switched off only during the backward
    assert torch.equal(x.grad.cpu(), torch.full((4,), 2.0)) and torch.equal(grad.cpu(), torch.ones(4))
    assert torch.equal(from_thread["grad"].cpu(), torch.full((4,), 3.0))
    _RecordThread.apply(torch.ones(2, requires_grad=True)).sum().backward()  # a CPU graph: untouched
    assert _RecordThread.seen[-1] == (main, True)


def test_module_training_step_on_spyre(bare_device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).spyre()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4, device=bare_device), torch.randn(16, 1, device=bare_device)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.grad.device == bare_device for p in model.parameters())


def test_save_and_load_keep_the_device_and_support_map_location(bare_device, tmp_path):
    x = torch.arange(6.0, device=bare_device).view(2, 3)
    path = tmp_path / "x.pt"
    torch.save({"x": x, "view": x[1]}, path)
    loaded = torch.load(path)
    assert loaded["x"].device == bare_device and torch.equal(loaded["x"].cpu(), x.cpu())
    # Views saved together still share storage after loading.
    loaded["view"].fill_(-1.0)
    assert loaded["x"][1].tolist() == [-1.0, -1.0, -1.0]
    on_cpu = torch.load(path, map_location="cpu")
    assert on_cpu["x"].device.type == "cpu"
    buffer = io.BytesIO()
    torch.save(torch.ones(2), buffer)
    buffer.seek(0)
    moved = torch.load(buffer, map_location="spyre:0")
    assert moved.device == bare_device


def test_transfer_counters(bare_device):
    before = torch.spyre.transfer_stats()
    x = torch.ones(10).to(bare_device)       # 40 bytes host -> device
    y = x * 2                                # a fallback result is materialised, not transferred
    y.copy_(x)                               # 40 bytes device -> device
    _ = y.cpu()                              # 40 bytes device -> host
    _ = x.clone()                            # an on-device copy: 40 bytes device -> device
    after = torch.spyre.transfer_stats()
    assert {k: after[k] - before[k] for k in after} == {
        "host_to_device_bytes": 40, "host_to_device_count": 1,
        "device_to_host_bytes": 40, "device_to_host_count": 1,
        "device_to_device_bytes": 80, "device_to_device_count": 2,
    }
    torch.spyre.reset_transfer_stats()
    assert set(torch.spyre.transfer_stats().values()) == {0}


def test_item_and_printing(bare_device):
    x = torch.tensor([1.5, 2.5], device=bare_device)
    assert x[1].item() == 2.5
    assert "device='spyre:0'" in repr(x)


def test_conjugate_and_negative_views_copy_correctly(bare_device):
    z_host = torch.randn(4, dtype=torch.complex64)
    z = z_host.to(bare_device)
    conj = z.conj()
    assert conj.is_conj()
    assert torch.equal(conj.cpu(), z_host.conj())          # device -> host resolves the bit
    dst = torch.empty_like(z)
    dst.copy_(conj)                                        # device -> device
    assert torch.equal(dst.cpu(), z_host.conj())
    assert conj.imag.is_neg() and torch.equal(conj.imag.cpu(), z_host.conj().imag)
    dst.copy_(z_host.conj())                               # host conj view -> device
    assert torch.equal(dst.cpu(), z_host.conj())


def test_convolution_forward_and_backward(bare_device):
    torch.manual_seed(0)
    x_host, w_host = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3, requires_grad=True)
    w = w_host.detach().to(bare_device).requires_grad_()
    out = torch.nn.functional.conv2d(x_host.to(bare_device), w, padding=1)
    out.square().sum().backward()
    torch.nn.functional.conv2d(x_host, w_host, padding=1).square().sum().backward()
    assert out.shape == (1, 4, 8, 8) and w.grad.device == bare_device
    torch.testing.assert_close(w.grad.cpu(), w_host.grad)


def test_wrapped_numbers_from_composite_kernels_keep_their_meaning(bare_device):
    # take_along_dim's composite kernel calls remainder(indices, <int>) with a
    # wrapped-number tensor, which reaches the fallback as a Python int.
    t_host = torch.arange(6.0).view(2, 3)
    idx_host = torch.tensor([[0, 2], [1, 0]])
    got = torch.take_along_dim(t_host.to(bare_device), idx_host.to(bare_device), dim=1)
    assert torch.equal(got.cpu(), torch.take_along_dim(t_host, idx_host, dim=1))
    ints = torch.arange(5, dtype=torch.int32, device=bare_device)
    assert torch.ops.aten.add.Tensor(ints, torch.tensor(2)).dtype == torch.int32
