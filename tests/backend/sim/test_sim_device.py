"""The simulator inside the real spyre device: coverage, dtypes, precision, stats, clocks, padding."""
import json

import pytest
import torch
import torch.nn.functional as F

from spyre_device import hooks
from spyre_device.sim.precision import error_bound
from tests.backend.sim.sim_helpers import run_python, write  # noqa: F401  (run_python: a fixture)

sim = torch.spyre.sim


@pytest.fixture
def x():
    return torch.randn(4, 70, generator=torch.Generator().manual_seed(0)).to("spyre")


def test_sim_is_installed_as_torch_spyre_sim():
    assert sim.simulator() is not None
    assert sim.coverage_table().name == "spyre-default"


def test_unsupported_op_error_names_the_op_and_the_device(x):
    with pytest.raises(NotImplementedError, match=r"aten::digamma\.out is not implemented on the spyre device "
                                                   r"\(unsupported in coverage table default\.yaml:\d+\)"):
        torch.digamma(x)
    with pytest.raises(NotImplementedError, match=r"aten::hardswish\S* .* adapter hardswish_by_clamp does not apply"):
        F.hardswish(torch.ones(3, dtype=torch.int32, device="spyre"))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_float64_and_complex128_are_refused(dtype):
    name = "Double" if dtype == torch.float64 else "ComplexDouble"
    with pytest.raises(RuntimeError, match=f"Spyre backend does not support dtype {name}"):
        torch.zeros(3, dtype=dtype, device="spyre")
    with pytest.raises(RuntimeError, match=f"Spyre backend does not support dtype {name}"):
        torch.zeros(3, dtype=dtype).to("spyre")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.int32, torch.bool])
def test_supported_dtypes_compute(dtype):
    cpu = torch.arange(6).reshape(2, 3).to(dtype)
    result = (cpu.to("spyre") * cpu.to("spyre")).cpu()
    assert torch.equal(result, cpu * cpu)


def test_native_and_fallback_ops_match_cpu_and_are_counted(x):
    host = x.cpu()
    with sim.capture() as cap:
        y = torch.softmax(x * 2 + 1, dim=-1)
        z = torch.sin(x)
    torch.testing.assert_close(y.cpu(), torch.softmax(host * 2 + 1, dim=-1))
    torch.testing.assert_close(z.cpu(), torch.sin(host))
    ops = cap.result["ops"]
    assert ops["aten::sin.out"]["status"] == "fallback" and cap.result["fallbacks"] == {"aten::sin.out": 1}
    assert {name: rec["status"] for name, rec in ops.items() if "sin" not in name} == {
        "aten::mul.out": "native", "aten::add.out": "native", "aten::_softmax.out": "native"}
    padded = 4 * 3 * 128  # a (4, 70) fp32 tensor: 280 bytes per row -> 3 sticks
    assert cap.result["host_transfers"]["device_to_host"] == {"count": 1, "bytes": padded}
    assert cap.result["host_transfers"]["host_to_device"] == {"count": 1, "bytes": padded}


def test_adapter_rewrites_pow_and_is_counted(x):
    with sim.capture() as cap:
        cubed = x.pow(3)
        hs = F.hardswish(x)
    torch.testing.assert_close(cubed.cpu(), x.cpu().pow(3))
    torch.testing.assert_close(hs.cpu(), F.hardswish(x.cpu()))
    assert cap.result["adapters"] == {"pow_small_integer_exponent": 1, "hardswish_by_clamp": 1}
    assert cap.result["adapted_ops"] == 2 and cap.result["unsupported_ops"] == 0
    with sim.capture() as cap:  # pow is a fallback op: an exponent the adapter cannot rewrite runs on the host
        root = x.abs().pow(2.5)
    torch.testing.assert_close(root.cpu(), x.cpu().abs().pow(2.5))
    assert cap.result["fallbacks"] == {"aten::pow.Tensor_Scalar_out": 1} and cap.result["adapted_ops"] == 0
    same = x.pow(1)
    same.zero_()
    assert x.abs().sum().item() > 0  # the result is a new tensor, not the input


def test_stats_account_for_every_op_executed(x):
    class Witness:
        """An independent hook object: sees every op the fallback runs."""

        def __init__(self):
            self.seen = {}

        def before_op(self, op, args, kwargs):
            return None

        def after_op(self, op, args, kwargs, outputs, host_seconds):
            self.seen[op.name()] = self.seen.get(op.name(), 0) + 1

    witness = Witness()
    hooks.register_op_hooks(witness)
    try:
        with sim.capture() as cap:
            h = F.gelu(F.linear(x, torch.ones(8, 70, device="spyre")))
            _ = (h.sum(dim=0) / 3).cos().pow(2)
            with pytest.raises(NotImplementedError):
                torch.lgamma(x)
    finally:
        hooks.unregister_op_hooks(witness)
    result = cap.result
    counted = {name.split(" [")[0]: 0 for name in result["ops"]}
    for name, rec in result["ops"].items():
        if rec["status"] != "unsupported":
            counted[name.split(" [")[0]] += rec["count"]
    assert {k: v for k, v in counted.items() if v} == witness.seen
    assert result["unsupported_ops"] == 1 and result["ops"]["aten::lgamma.out [unsupported]"]["count"] == 1
    assert result["op_count"] == sum(witness.seen.values()) + 1
    assert result["sim_seconds"] == pytest.approx(sum(rec["sim_seconds"] for rec in result["ops"].values()))
    json.dumps(result)  # the runner stores it as JSON


def test_reduced_precision_changes_a_large_fp32_matmul_within_the_bound():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(512, 1024, generator=gen), torch.randn(1024, 256, generator=gen)
    exact = a @ b
    assert sim.reduced_precision() is True  # the documented default
    reduced = (a.to("spyre") @ b.to("spyre")).cpu()
    with sim.precision(False):
        full = (a.to("spyre") @ b.to("spyre")).cpu()
    assert torch.equal(full, exact)
    error = (reduced - exact).abs()
    assert error.max() > 0
    assert (error <= error_bound(a, b)).all()


def test_reduced_precision_makes_the_simulated_matmul_faster():
    a, b = torch.randn(1024, 4096).to("spyre"), torch.randn(4096, 1024).to("spyre")  # compute-bound in fp32
    with sim.capture() as fast:
        a @ b
    with sim.precision(False), sim.capture() as slow:
        a @ b
    assert slow.result["sim_seconds"] > fast.result["sim_seconds"] > 0


def test_simulated_time_advances_the_current_stream_clock():
    a = torch.randn(256, 256).to("spyre")
    before = torch.spyre.sim_clock()
    start, end = torch.spyre.Event(), torch.spyre.Event()
    with sim.capture() as cap:
        start.record()
        a @ a
        end.record()
    end.synchronize()
    assert cap.result["sim_seconds"] > 0
    assert torch.spyre.sim_clock() - before == pytest.approx(cap.result["sim_seconds"])
    assert start.elapsed_time(end) == pytest.approx(cap.result["sim_seconds"] * 1e3)  # simulated ms
    side = torch.spyre.Stream()
    side_before, main_before = torch.spyre.sim_clock(side), torch.spyre.sim_clock()
    with torch.spyre.stream(side):
        a @ a
    assert torch.spyre.sim_clock(side) > side_before and torch.spyre.sim_clock() == main_before


def test_padding_shows_in_memory_stats():
    before = torch.spyre.memory_stats()
    t = torch.empty(1000, 3, device="spyre")  # 12 bytes per row, one 128-byte stick each
    after = torch.spyre.memory_stats()
    assert after["allocated_bytes.all.current"] - before["allocated_bytes.all.current"] == 1000 * 128
    assert after["padding_bytes.all.current"] - before["padding_bytes.all.current"] == 1000 * 116
    assert torch.spyre.layout(t)["sticks"] == 1000
    del t


def test_coverage_table_can_be_switched_by_api(tmp_path, x):
    table = write(tmp_path, "strict.yaml", """
        schema_version: 1
        name: strict
        default: unsupported
        families:
          elementwise: {cost: elementwise, native: [mul], fallback: [add]}
    """)
    try:
        sim.use_coverage(table)
        (x * x).cpu()
        with sim.capture() as cap:
            x + x
        assert cap.result["fallbacks"] == {"aten::add.out": 1}
        with pytest.raises(NotImplementedError, match=r"aten::sub\.out .*strict\.yaml:3 \(default\)"):
            x - x
    finally:
        sim.use_coverage(sim.load_coverage())


def test_environment_selects_table_int64_policy_and_precision(tmp_path, run_python):
    table = write(tmp_path, "t.yaml", """
        schema_version: 1
        name: env-table
        default: fallback
        warn_on_fallback: true
        families:
          elementwise: {cost: elementwise, unsupported: [mul]}
    """)
    script = """
        import json, warnings, torch
        warnings.simplefilter("always")
        x = torch.ones(3, device="spyre")
        try:
            x * x
            refused = None
        except NotImplementedError as e:
            refused = str(e)
        try:
            torch.nn.functional.hardswish(x)
            cubed = "ran"
        except NotImplementedError as e:
            cubed = str(e)
        big = torch.tensor([2**31 + 5]).to("spyre")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            wrapped = (big + 0).cpu().item()
            (big + 1).cpu()
        clocks = []
        if torch.spyre.device_count() > 1:  # an op on card 1 advances card 1's clock only
            y = torch.ones(64, 64, device="spyre:1")
            before = (torch.spyre.sim_clock(torch.spyre.current_stream(0)), torch.spyre.sim_clock(torch.spyre.current_stream(1)))
            y + y
            clocks = [torch.spyre.sim_clock(torch.spyre.current_stream(i)) - before[i] for i in (0, 1)]
        print(json.dumps({"table": torch.spyre.sim.coverage_table().name, "refused": refused,
                          "reduced": torch.spyre.sim.reduced_precision(), "value": wrapped,
                          "warnings": [str(w.message) for w in caught], "cubed": cubed, "clocks": clocks}))
    """
    env = {"SPYRE_COVERAGE": str(table), "SPYRE_REDUCED_PRECISION": "0", "SPYRE_DEVICE_COUNT": "2"}
    out = json.loads(run_python(script, env).splitlines()[-1])
    assert out["table"] == "env-table" and not out["reduced"]
    assert out["cubed"] == "ran"  # hardswish is unlisted in this table: the default, fallback
    assert out["clocks"][0] == 0 and out["clocks"][1] > 0
    assert out["refused"].startswith("aten::mul.out is not implemented on the spyre device")
    assert out["value"] == -(2**31) + 5
    assert sum("int64" in w for w in out["warnings"]) == 1
    assert any("aten::add.out runs on the host" in w for w in out["warnings"])
    native = json.loads(run_python(script, {"SPYRE_INT64": "native", "SPYRE_ADAPTERS": "0"}).splitlines()[-1])
    assert native["value"] == 2**31 + 5 and not any("int64" in w for w in native["warnings"])
    assert native["cubed"].startswith("aten::hardswish")  # unsupported, and its adapter is switched off
    assert "is not implemented on the spyre device" in native["cubed"]
    assert native["reduced"] is True  # the documented default


def test_bad_environment_fails_at_import_with_one_clear_line(tmp_path, run_python):
    bad = write(tmp_path, "bad.yaml", "schema_version: 1\nname: b\ndefault: never\nfamilies: {}\n")
    with pytest.raises(AssertionError, match=rf"{bad}:3: default: Input should be"):
        run_python("import torch", {"SPYRE_COVERAGE": str(bad)})


def test_sim_off_leaves_a_plain_device(run_python):
    script = """
        import json, torch
        x = torch.ones(3, device="spyre")
        out = {"digamma": torch.digamma(x).cpu().tolist(), "double": str(torch.ones(2, dtype=torch.float64, device="spyre").dtype)}
        try:
            torch.spyre.sim.simulator()
        except RuntimeError as e:
            out["sim"] = str(e)
        print(json.dumps(out))
    """
    out = json.loads(run_python(script, {"SPYRE_SIM": "0"}).splitlines()[-1])
    assert out["digamma"] == pytest.approx([-0.5772157] * 3) and out["double"] == "torch.float64"
    assert "not installed" in out["sim"]
