"""Round trip: imported rules decide every variant the way torch-spyre would.

For each real torch-spyre config (tests/fixtures/torch-spyre: upstream_tests and upstream_tests_beta)
and for the demo upstream file run on the device, the variants torch-spyre generates and their modes
(tests/testdefs/torch_spyre_reference.py, from torch-spyre's documented behaviour) must equal those
the imported rules generate and decide.
"""
from __future__ import annotations

import pytest
import yaml

from testdefs import ids, load_rules
from testdefs.matching import formatted_op
from testdefs.torch_spyre_import import convert
from tests.testdefs.testdefs_helpers import (
    DEMO_FILE,
    FIXTURES,
    TEST_BASE,
    TORCH_SPYRE_CONFIGS,
    device_env,
    pytest_command,
    read_report,
    run_command,
    write,
)
from tests.testdefs.torch_spyre_reference import expected_variants, file_config

CONFIGS = sorted(TORCH_SPYRE_CONFIGS.rglob("*.yaml"))
ALL_DTYPES = ("float16", "bfloat16", "float32", "float64", "int64", "bool", "complex64", "complex128")
OPS = ("add", "sub", "mul", "div", "div.floor_rounding", "abs", "topk")
UNLISTED = "test_not_named_by_the_config"
DEMO_CONFIG = FIXTURES / "testdefs" / "torch_spyre_demo_config.yaml"


def variant_id(path: str, cls: str, method: str, op: str | None, dtype: str | None) -> str:
    op_part = f"_{formatted_op(op)}" if op else ""
    dtype_part = f"_{dtype}" if dtype else ""
    return f"{path}::{cls}PRIVATEUSE1::{method}{op_part}_spyre{dtype_part}"


def imported_variants(rules, path: str, upstream: dict) -> dict[tuple, str]:
    """What the imported rules generate (upstream's variants plus `generate`) and how they decide them."""
    out = {}
    for (cls, method), pairs in upstream.items():
        gen_dtypes, gen_ops = rules.generated_variants(path, cls, method)
        ops = sorted({op for op, _ in pairs}, key=str)
        dtypes = sorted({dtype for _, dtype in pairs}, key=str)
        candidates = set(pairs) | {(op, dtype) for op in gen_ops for dtype in dtypes}
        if None not in dtypes:
            candidates |= {(op, dtype) for dtype in gen_dtypes for op in ops}
        for op, dtype in candidates:
            decision = rules.decide(variant_id(path, cls, method, op, dtype), op=op)
            if decision.mode != "exclude":
                out[(cls, method, op, dtype)] = decision.mode
    return out


def universe(file_cfg: dict, dtypes: tuple[str, ...] | None) -> dict:
    """Generic tests named by the config (plus one it does not name per class), with upstream variants."""
    tests = {}
    for item in file_cfg.get("tests") or []:
        has_ops = bool(((item.get("edits") or {}).get("ops")))
        for name in item["names"]:
            cls, _, method = name.rpartition("::")
            cls = cls or "TestNamedByMethodOnly"
            ops = OPS if has_ops else (None,)
            tests[(cls, method)] = [(op, dtype) for op in ops for dtype in (dtypes or (None,))]
            tests.setdefault((cls, UNLISTED), [(None, dtype) for dtype in (dtypes or (None,))])
    return tests


@pytest.mark.parametrize("upstream_dtypes", [None, ALL_DTYPES, ("float32",)],
                         ids=["no-dtypes", "all-dtypes", "float32-only"])
@pytest.mark.parametrize("config_path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_real_config_round_trip(tmp_path, config_path, upstream_dtypes):
    text = config_path.read_text(encoding="utf-8")
    config = yaml.safe_load(text)
    rules = load_rules(write(tmp_path / "rules.yaml", convert(text, config_path.name)[0]))
    for section in rules.sections:
        upstream = universe(file_config(config, section.path), upstream_dtypes)
        expected = expected_variants(config, section.path, upstream)
        assert imported_variants(rules, section.path, upstream) == expected, section.path


def test_round_trip_catches_a_lost_decision(tmp_path):
    """The check can fail: rules that ignore the global dtype list generate variants torch-spyre does not."""
    path = TORCH_SPYRE_CONFIGS / "upstream_tests_beta" / "test_masked.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    rules_text = convert(path.read_text(encoding="utf-8"), path.name)[0].replace("exclude_unsupported: true",
                                                                                   "exclude_unsupported: false")
    rules = load_rules(write(tmp_path / "rules.yaml", rules_text))
    upstream = universe(file_config(config, "test/test_masked.py"), ALL_DTYPES)
    # test_masked skips everything it names; only the unlisted... are skip too: give it a mandatory test
    upstream[("TestMasked", "test_mask_layout")] = [(None, d) for d in ALL_DTYPES]
    config["test_suite_config"]["files"][0]["unlisted_test_mode"] = "mandatory_success"
    rules_text = rules_text.replace("unlisted_test_mode: exclude", "unlisted_test_mode: mandatory_success")
    rules = load_rules(write(tmp_path / "rules2.yaml", rules_text))
    assert imported_variants(rules, "test/test_masked.py", upstream) != \
        expected_variants(config, "test/test_masked.py", upstream)


def _universe_from_report(report: dict) -> dict:
    """Generic tests and their (op, dtype) variants, from a collection report of the demo file."""
    tests: dict = {}
    for test_id, record in report["decisions"].items():
        tid = ids.parse(test_id)
        op = record.get("op")
        method = tid.method_base
        if op:
            method = method[: -len(formatted_op(op)) - 1]
        tests.setdefault((tid.class_base, method), []).append((op, tid.dtype))
    return tests


def test_demo_upstream_round_trip_on_the_device(tmp_path, run_command):
    """The demo upstream file, run on spyre with the imported rules (test base + plugin), generates and
    decides exactly the variants torch-spyre's semantics give for upstream's own variants."""
    config = yaml.safe_load(DEMO_CONFIG.read_text(encoding="utf-8"))
    rules = write(tmp_path / "rules.yaml", convert(DEMO_CONFIG.read_text(encoding="utf-8"), DEMO_CONFIG.name)[0])
    other = write(tmp_path / "other.yaml", "files:\n  - path: test/other.py\n    unlisted_test_mode: xfail\n")
    natural = tmp_path / "natural.json"
    run_command(pytest_command("--collect-only", f"--testdefs={other}", f"--testdefs-report={natural}", DEMO_FILE),
        device_env())
    upstream = _universe_from_report(read_report(natural))
    assert ("TestDemoReuse", "test_dtype_sensitive") in upstream
    report_path = tmp_path / "imported.json"
    process = run_command(pytest_command(f"--testdefs={rules}", f"--testdefs-report={report_path}", DEMO_FILE),
                  device_env(TORCH_TEST_DEVICES=str(TEST_BASE)))
    assert report_path.exists(), process.stdout[-3000:] + process.stderr[-3000:]
    report = read_report(report_path)
    generated = {}
    for test_id, record in report["decisions"].items():
        if record["mode"] == "exclude":
            continue
        tid = ids.parse(test_id)
        method = tid.method_base[: -len(formatted_op(record["op"])) - 1] if record.get("op") else tid.method_base
        generated[(tid.class_base, method, record.get("op"), tid.dtype)] = record["mode"]
    expected = expected_variants(config, DEMO_FILE, upstream)
    assert generated == expected
    # float16 was added by the config's include although upstream's @dtypes leaves it out, and it ran
    key = f"{DEMO_FILE}::TestDemoReusePRIVATEUSE1::test_dtype_sensitive_spyre_float16"
    assert report["decisions"][key]["outcome"] == "passed"
    # sub was added by the config's ops include although the test's @ops list leaves it out
    assert ("TestDemoOps", "test_op_runs", "sub", "float32") in generated
