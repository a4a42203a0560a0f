"""The C++ fast path of the host fallback: armed ops skip Python and are booked exactly as Python books them."""
import warnings

import pytest
import torch
import torch.nn.functional as F

from spyre_device import hooks

sim = torch.spyre.sim


class _PythonHook:
    """Any hook object without ``native_fast_path`` sends every op through the Python fallback."""

    def before_op(self, op, args, kwargs):
        return None

    def after_op(self, *args):
        pass


def _workload(x, w, bias, target, big):
    a = x + 1.5
    b = torch.relu(a * 2) @ w  # reduced-precision mm.out
    c = torch.addmm(bias, x, w, beta=0.5, alpha=2.0)  # reduced-precision addmm
    d = F.cross_entropy(b, target)  # int64 target: the int64 policy's per-call decision
    e = torch.softmax(c, dim=-1).sum(dim=0)
    f = torch.sin(x)  # a fallback op: PCIe transfers
    g = big @ big.t()  # K > 64: per-stick accumulation
    h = torch.stack([a, b]).mean()  # a TensorList argument
    values, indices = torch.max(c, dim=1)  # two results, one int64
    wrapped = target * 3_000_000_000 + 5  # int64 values outside int32: the policy wraps them
    kept = target.view(2, 4).t() * 7  # within int32, from a transposed operand: unchanged
    return [a, b, c, d, e, f, g, h, values, indices, wrapped, kept]


def _inputs():
    gen = torch.Generator().manual_seed(3)
    cpu = (torch.randn(8, 70, generator=gen), torch.randn(70, 70, generator=gen), torch.randn(70, generator=gen),
           torch.randint(0, 70, (8,), generator=gen), torch.randn(33, 200, generator=gen))
    return [t.to("spyre") for t in cpu]


def _run(python_hooks: bool):
    inputs = _inputs()
    extra = _PythonHook() if python_hooks else None
    if extra is not None:
        hooks.register_op_hooks(extra)
    try:
        _workload(*inputs)  # first calls plan (and arm) each op
        sim.reset_stats()
        _workload(*inputs)  # planned again after the reset; now armed
        with sim.capture() as cap:
            results = _workload(*inputs)
    finally:
        if extra is not None:
            hooks.unregister_op_hooks(extra)
    return [r.cpu() for r in results], cap.result


def test_native_path_books_every_op_as_the_python_path_does():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        python_results, python_stats = _run(python_hooks=True)
        native_results, native_stats = _run(python_hooks=False)
    for expected, actual in zip(python_results, native_results):
        assert torch.equal(expected, actual)  # same numerics: reduced precision, int64 policy
    assert python_stats["ops"].keys() == native_stats["ops"].keys()
    for name, expected in python_stats["ops"].items():
        actual = native_stats["ops"][name]
        assert {k: actual[k] for k in ("status", "count", "bytes_moved")} == {
            k: expected[k] for k in ("status", "count", "bytes_moved")}, name
        assert actual["flops"] == pytest.approx(expected["flops"], rel=1e-12), name
        assert actual["sim_seconds"] == pytest.approx(expected["sim_seconds"], rel=1e-12), name
    for key in ("op_count", "native_ops", "fallback_ops", "fallbacks", "policies", "host_transfers"):
        assert native_stats[key] == python_stats[key], key
    assert native_stats["sim_seconds"] == pytest.approx(python_stats["sim_seconds"], rel=1e-12)
    assert native_stats["policies"]["reduced_precision_matmul"] >= 3


def test_armed_ops_do_not_enter_python(monkeypatch):
    x = torch.randn(16, 16).to("spyre")
    simulator = sim.simulator()
    calls = []
    original = simulator.before_op
    x + x  # plans and arms add.out
    monkeypatch.setattr(simulator, "before_op", lambda op, *a: calls.append(op) or original(op, *a))
    hooks.sync_native_mode()
    with sim.capture() as cap:
        for _ in range(5):
            x + x
    assert cap.result["ops"]["aten::add.out"]["count"] == 5  # counted all the same
    assert not calls


def test_the_simulated_clock_advances_on_the_native_path():
    x = torch.randn(64, 64).to("spyre")
    x * 3
    before = torch.spyre.current_stream().sim_time
    with sim.capture() as cap:
        x * 3
    assert torch.spyre.current_stream().sim_time - before == pytest.approx(cap.result["sim_seconds"], rel=1e-9)
    assert cap.result["sim_seconds"] > 0


def test_a_resized_out_tensor_and_a_view_result_come_back_on_the_card():
    x = torch.arange(12.0).to("spyre")
    out = torch.empty(0, device="spyre")
    torch.add(x, 1, out=out)  # the kernel grows out= on the host
    torch.add(x, 1, out=out)
    assert out.shape == (12,) and out.device.type == "spyre" and out.cpu().tolist() == [v + 1 for v in range(12)]
    x.unfold(0, 4, 4)
    view = x.unfold(0, 4, 4)  # a fallback op whose result shares x's memory
    assert view.device.type == "spyre" and view.shape == (3, 4)
    view.mul_(0)
    assert x.cpu().tolist() == [0.0] * 12
