"""`relay-cli backend info|adapters|coverage`, driven through the real dispatcher."""
import json

from relay.cli import main
from spyre_device.sim.adapters import ADAPTERS
from tests.backend.sim.sim_helpers import write


def run_json(capsys, *argv):
    assert main(["backend", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_adapters_lists_every_declared_adapter(capsys):
    listed = run_json(capsys, "adapters")
    assert [a["name"] for a in listed] == [a.name for a in ADAPTERS]
    assert {"name": "pow_small_integer_exponent", "op": "aten::pow.Tensor_Scalar"}.items() <= listed[0].items()


def test_adapters_table_output(capsys):
    assert main(["backend", "adapters"]) == 0
    assert "hardswish_by_clamp" in capsys.readouterr().out


def test_coverage_resolves_given_ops(capsys):
    out = run_json(capsys, "coverage", "add.Tensor", "aten::digamma.out", "made_up_op", "ones_like")
    assert [(r["op"], r["status"]) for r in out["ops"]] == [
        ("aten::add.Tensor", "native"), ("aten::digamma.out", "unsupported"), ("aten::made_up_op", "fallback"),
        ("aten::ones_like", "composite")]  # decomposed (empty + fill_) before it reaches the card
    assert out["default"] == "fallback"


def test_coverage_reports_the_numeric_policy_of_each_op(capsys):
    out = run_json(capsys, "coverage", "mm.default", "addmm.out", "native_layer_norm", "ones_like")
    numerics = {r["op"]: r["numerics"] for r in out["ops"]}
    assert numerics["aten::mm.default"].startswith("reduced_precision_matmul")
    assert numerics["aten::addmm.out"].startswith("reduced_precision_matmul")
    assert numerics["aten::native_layer_norm"] == "cpu"  # computes as the CPU does
    assert numerics["aten::ones_like"] == "those of the ops it becomes"


def test_coverage_lists_composite_ops(capsys):
    out = run_json(capsys, "coverage", "--status", "composite")
    assert {"aten::ones_like", "aten::mv", "aten::logsumexp"} <= {r["op"] for r in out["ops"]}
    assert len(out["ops"]) == out["counts"]["composite"]


def test_coverage_verify_sweeps_named_opinfos(capsys):
    out = run_json(capsys, "coverage", "--verify", "abs", "linalg.det", "--dtypes", "float32")
    assert out["disagreements"] == []
    outcomes = {p["opinfo"]: (p["outcome"], p["reached"]) for p in out["pairs"]}
    assert outcomes["abs"] == ("ok", ["abs.out"])
    assert outcomes["linalg.det"][0] == "refused"


def test_coverage_verify_reports_a_lying_table_with_exit_1(capsys, tmp_path):
    # mv is listed native, but PyTorch decomposes it into addmv before it reaches the card.
    table = write(tmp_path, "liar.yaml", "{schema_version: 1, name: liar, default: fallback, "
                                         "families: {matmul: {cost: matmul, native: [mv]}}}")
    assert main(["backend", "coverage", "--verify", "mv", "--dtypes", "float32", "--table", str(table), "--json"]) == 1
    found = json.loads(capsys.readouterr().out)["disagreements"]
    assert [(d["op"], d["kind"]) for d in found] == [("mv", "listed-but-not-reached")]
    assert "addmv" in found[0]["observed"]


def test_coverage_verify_bad_arguments_are_user_errors(capsys):
    assert main(["backend", "coverage", "--verify", "--dtypes", "float33"]) == 2
    assert "--dtypes: 'float33' is not a torch dtype" in capsys.readouterr().err
    assert main(["backend", "coverage", "--verify", "no_such_opinfo"]) == 2
    assert "no OpInfo in op_db is named no_such_opinfo" in capsys.readouterr().err


def test_coverage_filters_by_status(capsys):
    out = run_json(capsys, "coverage", "--status", "unsupported")
    assert out["ops"] and {r["status"] for r in out["ops"]} == {"unsupported"}
    assert len(out["ops"]) == out["counts"]["unsupported"]


def test_coverage_honours_spyre_coverage(capsys, monkeypatch, tmp_path):
    table = write(tmp_path, "mine.yaml", """
        schema_version: 1
        name: mine
        default: unsupported
        families:
          elementwise: {cost: elementwise, native: [add]}
    """)
    monkeypatch.setenv("SPYRE_COVERAGE", str(table))
    out = run_json(capsys, "coverage", "sub.Tensor")
    assert out["table"] == "mine" and out["ops"][0]["status"] == "unsupported"


def test_bad_table_is_one_line_and_exit_2(capsys, tmp_path):
    bad = write(tmp_path, "bad.yaml", "schema_version: 1\nname: x\ndefault: sometimes\nfamilies: {}\n")
    assert main(["backend", "coverage", "--table", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"relay-cli: error: {bad}:3: default:") and "\n" not in err


def test_info_reports_settings_and_constants(capsys, monkeypatch):
    monkeypatch.setenv("SPYRE_INT64", "native")
    out = run_json(capsys, "info")
    assert out["settings"]["int64"] == "native"
    assert out["constants"]["cores"] == 32 and out["constants"]["stick_bytes"] == 128
    assert out["coverage"]["name"] == "spyre-default"
    assert out["device"]["available"] and out["device"]["simulator_installed"]


def test_info_bad_setting_is_a_user_error(capsys, monkeypatch):
    monkeypatch.setenv("SPYRE_INT64", "sometimes")
    assert main(["backend", "info"]) == 2
    assert "SPYRE_INT64='sometimes'" in capsys.readouterr().err
