"""The torch-spyre importer on real torch-spyre configs (tests/fixtures/torch-spyre): every reason,
every comment and every decision survives, and the report accounts for every name."""
from __future__ import annotations

import pytest
import yaml

from testdefs import load_rules
from testdefs.reasons import infer_category, issue_of
from testdefs.torch_spyre_config import ConfigError
from testdefs.torch_spyre_import import NO_REASON, convert
from tests.testdefs.testdefs_helpers import TORCH_SPYRE_CONFIG, TORCH_SPYRE_CONFIGS, write

ALL_CONFIGS = sorted(TORCH_SPYRE_CONFIGS.rglob("*.yaml"))


def imported(tmp_path, config_path):
    text = config_path.read_text(encoding="utf-8")
    rules_yaml, report = convert(text, config_path.name)
    return rules_yaml, report, load_rules(write(tmp_path / "rules.yaml", rules_yaml))


def beta(name):
    return TORCH_SPYRE_CONFIGS / "upstream_tests_beta" / name


def decide(rules, path, cls, method, dtype="float16", op=None):
    suffix = f"_spyre_{dtype}" if dtype else "_spyre"
    return rules.decide(f"{path}::{cls}PRIVATEUSE1::{method}{suffix}", op=op)


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=[p.name for p in ALL_CONFIGS])
def test_every_real_config_imports_to_valid_rules_accounting_for_every_name(tmp_path, config):
    _, report, rules = imported(tmp_path, config)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))["test_suite_config"]
    listed = [(f, name) for f in data["files"] for item in f.get("tests") or [] for name in item["names"]]
    assert len(report.names) == len(listed)  # one record per name of the input
    assert [r.name for r in report.names] == [name for _, name in listed]
    for record in report.names:
        assert record.entry is not None or "duplicate" in record.note
    assert len(rules.sections) == len(data["files"])


def test_mode_line_comments_are_the_failure_class(tmp_path):
    _, _, rules = imported(tmp_path, beta("test_sort_and_select.yaml"))
    path = "test/test_sort_and_select.py"
    sort = decide(rules, path, "TestSortAndSelect", "test_sort")
    assert sort.mode == "xfail" and sort.reason.category == "unsupported_op"
    assert sort.reason.text.startswith("xfail: NotImplementedError | These tests exercise various sorting")
    infra = decide(rules, path, "TestSortAndSelect", "test_stable_sort_against_numpy")
    assert infra.reason.category == "infra" and "dxp_standalone not detected" in infra.reason.text
    # skip deletes the variant in torch-spyre: exclude here, with the reason kept
    cpu_only = decide(rules, path, "TestSortAndSelect", "test_sort_large")
    assert cpu_only.mode == "exclude" and cpu_only.reason.category == "not_applicable"
    assert "does not engage the torch-spyre layer" in cpu_only.reason.text
    # unlisted tests: unlisted_test_mode skip -> never generated
    assert decide(rules, path, "TestSortAndSelect", "test_not_listed").mode == "exclude"


def test_names_comments_and_issue_numbers_become_structured(tmp_path):
    _, _, rules = imported(tmp_path, beta("test_scatter_gather_ops.yaml"))
    gather = decide(rules, "test/test_scatter_gather_ops.py", "TestScatterGather", "test_gather_bool", "bool")
    assert gather.reason.issue == "https://github.com/torch-spyre/torch-spyre/issues/4328"
    assert gather.reason.text.startswith("xfail: Could not run 'aten::gather.out' | issue 4328 | aten::gather.out")


def test_commented_out_items_are_reported_not_pasted(tmp_path):
    rules_yaml, report, rules = imported(tmp_path, beta("test_view_ops.yaml"))
    assert "- names:" not in rules_yaml and "#   mode: xfail" not in rules_yaml
    assert any(":189: # - names:" in c for c in report.commented_out)
    new = decide(rules, "test/test_view_ops.py", "TestViewOps", "test_view_dtype_new")
    assert new.reason.text.startswith("does not engage the torch-spyre layer | These tests exercise view operations like chunk")
    assert len(new.reason.text) < 600
    _, report, _ = imported(tmp_path, beta("test_scatter_gather_ops.yaml"))
    assert any("# - name: float64" in c for c in report.commented_out)


def test_descriptions_and_file_level_comments_are_kept(tmp_path):
    rules_yaml, _, rules = imported(tmp_path, beta("test_scatter_gather_ops.yaml"))
    assert "description: Spyre primary dtype. Required by scatter_" in rules_yaml
    text, _, rules = imported(tmp_path, TORCH_SPYRE_CONFIGS / "upstream_tests" / "test_profiler_config.yaml")
    notes = {section.path: section.note for section in rules.sections}
    assert "TestProfilerDevice (NEW in PyTorch 2.13)" in notes["test/profiler/test_profiler.py"]
    assert notes["test/profiler/test_memory_profiler.py"].startswith("TestMemoryProfilerTimeline uses")
    assert "CppThreadTestCUDA: standalone class" in notes["test/profiler/test_cpp_thread.py"]
    # comments of mandatory_success items are notes on their entries
    ok = rules.sections[0].entries[0].model
    assert ok.mode == "mandatory_success" and ok.note == "Still CPU-only in TestProfiler on 2.13 (no device param)."
    vfio = decide(rules, "test/profiler/test_profiler.py", "TestProfilerDevice",
                  "test_kineto_profiler_with_environment_variable", None)
    assert vfio.mode == "exclude" and vfio.reason.category == "crash"


def test_global_supported_lists_are_enforced(tmp_path):
    _, _, rules = imported(tmp_path, beta("test_view_ops.yaml"))
    path = "test/test_view_ops.py"
    assert rules.global_config.exclude_unsupported
    kept = decide(rules, path, "TestViewOps", "test_conj_self", "float32")
    assert kept.mode == "mandatory_success"
    for dtype in ("float64", "complex128"):
        dropped = decide(rules, path, "TestViewOps", "test_conj_self", dtype)
        assert dropped.mode == "exclude" and dropped.reason.category == "unsupported_dtype"
    # per-op dtypes: float32 is a global dtype but not one of add's
    assert decide(rules, path, "TestViewOps", "test_conj_self", "float32", op="add").mode == "exclude"
    assert decide(rules, path, "TestViewOps", "test_conj_self", "float16", op="add").mode == "mandatory_success"
    # an op outside supported_ops (div.floor_rounding) is never generated
    assert decide(rules, path, "TestViewOps", "test_conj_self", "float16", op="div.floor_rounding").mode == "exclude"


def test_include_generates_variants_and_exclude_drops_them(tmp_path):
    _, _, rules = imported(tmp_path, TORCH_SPYRE_CONFIGS / "upstream_tests" / "test_binary_ufuncs_config.yaml")
    path = "test/test_binary_ufuncs.py"
    assert rules.generated_variants(path, "TestBinaryUfuncsPRIVATEUSE1", "test_contig_vs_transposed") == (
        ["float16", "bfloat16", "float32"], ["add", "sub", "mul"])
    assert decide(rules, path, "TestBinaryUfuncs", "test_contig_vs_transposed", "float32", op="add").mode \
        == "mandatory_success"
    assert decide(rules, path, "TestBinaryUfuncs", "test_contig_vs_transposed", "float32", op="div").mode == "exclude"
    _, _, rules = imported(tmp_path, beta("test_view_ops.yaml"))
    excluded = decide(rules, "test/test_view_ops.py", "TestOldViewOps", "test_broadcast_to", "int64")
    assert excluded.mode == "exclude" and "aten::random_.from" in excluded.reason.text


def test_last_entry_for_a_method_wins_and_is_reported(tmp_path):
    _, report, rules = imported(tmp_path, beta("inductor-test_debug_trace.yaml"))
    path = "test/inductor/test_debug_trace.py"
    # listed as mandatory_success under _cls_TestDebugTrace, then as skip under TestDebugTrace: skip wins
    assert decide(rules, path, "_cls_TestDebugTrace", "test_debug_printer_const", None).mode == "exclude"
    [overridden] = report.overridden
    assert overridden.startswith("_cls_TestDebugTrace::test_debug_printer_const at inductor-test_debug_trace.yaml:12 "
                                 "is listed as mandatory_success, but torch-spyre applies skip")


def test_duplicates_take_the_last_listing(tmp_path):
    _, report, rules = imported(tmp_path, TORCH_SPYRE_CONFIG)
    assert len(report.duplicates) == 4
    flat = decide(rules, "test/test_view_ops.py", "TestViewOps", "test_flatten_nonview", None)
    assert flat.mode == "exclude" and "In-device copy not implemented" in flat.reason.text
    assert report.guessed == []  # every skip in this config carries some comment


def test_unconvertible_features_are_listed_with_lines(tmp_path):
    _, report, _ = imported(tmp_path, TORCH_SPYRE_CONFIGS / "upstream_tests" / "test_autocast_config.yaml")
    assert report.not_converted == [
        "test_autocast_config.yaml:2: labels ['trunk'] (suite-level CI filter; testdefs selects tests with -m and tags)",
        "test_autocast_config.yaml:16: edits.functions of TestAutocastCPU::test_autocast_torch_expect_builtin_promote, "
        "TestAutocastCPU::test_autocast_torch_16, TestAutocastCPU::test_autocast_nn_16, "
        "TestAutocastCPU::test_autocast_disabled_with_fp32_dtype, TestAutocastCPU::test_generic_autocast"]


def test_missing_comment_and_unlisted_default_are_flagged(tmp_path):
    rules_yaml, report = convert("""
test_suite_config:
  files:
    - path: ${TORCH_DEVICE_ROOT}/tests/test_x.py
      tests:
        - names: [TestX::test_b]
          tags: [model_x, "smoke-test"]
        - names: [TestX::test_a]
          mode: xfail
          edits:
            modules: {include: [{name: Linear}]}
""", "x.yaml")
    rules = load_rules(write(tmp_path / "x.yaml", rules_yaml))
    decision = rules.decide("tests/test_x.py::TestXSPYRE::test_a_spyre")
    assert decision.mode == "xfail" and decision.tags == ("needs_reason",) and decision.reason.text == NO_REASON
    tagged = rules.decide("tests/test_x.py::TestXSPYRE::test_b_spyre")
    assert (tagged.mode, tagged.tags) == ("mandatory_success", ("model_x", "smoke_test"))
    assert rules.sections[0].unlisted_test_mode.value == "xfail"
    assert report.guessed and "torch-spyre's code default xfail" in report.notes[0]
    assert any("x.yaml:11: edits.modules" in n for n in report.not_converted)


@pytest.mark.parametrize("text, message", [
    ("files: []\n", "expected a mapping with the key test_suite_config"),
    ("test_suite_config: [unclosed\n", "not valid YAML"),
])
def test_input_that_is_not_a_torch_spyre_config(text, message):
    with pytest.raises(ConfigError, match=message):
        convert(text, "bad.yaml")


def test_category_and_issue_inference():
    assert infer_category("Signal Received: 11 (Segmentation fault)") == "crash"
    assert infer_category("NotImplementedError: Could not run 'aten::index.Tensor_out'") == "unsupported_op"
    assert infer_category("Complex not supported") == "unsupported_op"
    assert infer_category("Spyre backend does not support dtype Double") == "unsupported_dtype"
    assert infer_category("AssertionError: Tensor-likes are not close") == "numerics"
    assert infer_category("does not engage the torch-spyre layer") == "not_applicable"
    assert infer_category("looks fine to me") is None
    assert issue_of("dies on stride-2 copy_ (#3454)") == "https://github.com/torch-spyre/torch-spyre/issues/3454"
    assert issue_of("see https://github.com/o/r/issues/9).") == "https://github.com/o/r/issues/9"


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=[p.name for p in ALL_CONFIGS])
def test_no_comment_is_lost(tmp_path, config):
    """Every comment of the input is in the rules (reason, note, description) or listed as commented out."""
    from testdefs.torch_spyre_comments import comment_text, trailing_comment

    text = config.read_text(encoding="utf-8")
    rules_yaml, report = convert(text, config.name)
    kept = " ".join(str(v) for v in _strings(yaml.safe_load(rules_yaml))) + " " + " ".join(report.notes)
    kept = " ".join(kept.split())
    listed = {int(c.split(":")[1]) for c in report.commented_out}
    for number, line in enumerate(text.splitlines(), start=1):
        raw = line if line.strip().startswith("#") else trailing_comment(line)
        words = comment_text(raw) if raw else ""
        if not words or number in listed:
            continue
        assert " ".join(words.split()) in kept, f"{config.name}:{number}: {words}"


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value
