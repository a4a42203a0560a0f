"""RuleSet.decide: matching on normalised names, filters, versions, precedence, global config, relevance."""
from __future__ import annotations

import pytest

from testdefs import UNLISTED, load_rules, version_from_ref
from tests.testdefs.testdefs_helpers import write

RULES = """
global:
  supported_dtypes: [float16, {name: float32, precision: {atol: 1.0e-5, rtol: 1.0e-6}}, int64]
  supported_ops:
    - add
    - name: mul
      dtypes: [{name: float16, precision: {atol: 1.0e-3, rtol: 1.0e-3}}]
    - div
relevance:
  rules:
    - sources: ["aten/src/ATen/native/BinaryOps.cpp", "torch/_refs/**"]
      tests: [test/test_binary_ufuncs.py]
      ops: [add, mul]
    - sources: ["torch/_refs/*"]
      tests: [test/test_ops.py]
  always_run: [test/test_view_ops.py::TestViewOps::test_contiguous_self]
files:
  - path: test/test_view_ops.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: TestViewOps::test_view_copy
        mode: xfail_strict
        reason: {category: unsupported_op, text: "in-device copy", issue: "https://github.com/o/r/issues/80"}
      - match: test_unbind
        mode: skip
        reason: {category: crash, text: segfault}
      - match: "TestViewOps::test_*_complex*"
        mode: exclude
        reason: {category: unsupported_dtype, text: complex}
      - match: "re:TestOldViewOps::test_resize(_as)?_all_dtypes_and_devices"
        mode: xfail
        reason: {category: unsupported_op, text: resize_}
      - match: TestOldViewOps::test_transposes
        mode: xfail
        dtypes: {include: [int64]}
        reason: {category: unsupported_op, text: random_.from}
      - match: TestOldViewOps::test_flatten
        mode: xfail
        dtypes: {exclude: [float16]}
        reason: {category: numerics, text: "not float16"}
      - match: TestViewOps::test_maybe_view_chunk_cat
        mode: skip
        when: {torch: ">=2.14"}
        reason: {category: upstream_bug, text: "new in 2.14", since: "2.14"}
      - match: TestViewOps::test_conj_self
        mode: mandatory_success
        precision: {atol: 0.01}
        tags: [numerics_sensitive]
      - match: TestViewOps::test_storage_error
        mode: skip
        reason: {category: infra, text: exact name only}
      - match: TestViewOps::test_exact_variant_spyre_float64
        mode: xfail
        reason: {category: unsupported_dtype, text: only the float64 variant}
  - path: test/test_ops.py
    unlisted_test_mode: skip
    entries:
      - match: TestCommon::test_dtypes
        mode: xfail
        ops: {include: [div]}
        reason: {category: unsupported_op, text: div family}
      - match: TestCommon::test_out
        mode: exclude
        ops: {exclude: [add]}
        reason: {category: not_applicable, text: "out= only checked for add"}
      - match: TestCommon::test_out
        mode: mandatory_success
"""

VIEW = "test/test_view_ops.py"


def line(needle: str, text: str = RULES) -> str:
    """':N' of the first line of the rules text containing ``needle`` (refs are file:line)."""
    return f":{1 + next(i for i, row in enumerate(text.lstrip(chr(10)).splitlines()) if needle in row)}"


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    return load_rules(write(tmp_path_factory.mktemp("rules") / "rules.yaml", RULES))


def mode(rules, test_id, **kwargs) -> str:
    return rules.decide(test_id, **kwargs).mode


def test_exact_class_method_with_reason_and_ref(rules):
    decision = rules.decide(f"{VIEW}::TestViewOpsPRIVATEUSE1::test_view_copy_spyre_float16")
    assert decision.mode == "xfail_strict" and decision.strict
    assert decision.entry.endswith("rules.yaml" + line("- match: TestViewOps::test_view_copy"))
    assert decision.reason.category == "unsupported_op" and decision.reason.issue == "https://github.com/o/r/issues/80"
    assert decision.normalised == f"{VIEW}::TestViewOps::test_view_copy"
    assert decision.pattern == "TestViewOps::test_view_copy"
    assert "in-device copy https://github.com/o/r/issues/80 [" in decision.describe()


def test_suffix_drift_privateuse1_and_spyre_both_match(rules):
    for cls in ("TestViewOpsPRIVATEUSE1", "TestViewOpsSPYRE", "TestViewOps"):
        for method in ("test_view_copy_spyre_float16", "test_view_copy_spyre_int64", "test_view_copy_privateuse1"):
            assert mode(rules, f"{VIEW}::{cls}::{method}") == "xfail_strict", (cls, method)


def test_method_only_pattern_matches_any_class_of_the_file(rules):
    assert mode(rules, f"{VIEW}::TestViewOpsSPYRE::test_unbind_spyre") == "skip"
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_unbind_spyre") == "skip"
    assert mode(rules, "test/test_other.py::TestViewOpsSPYRE::test_unbind_spyre") == UNLISTED


def test_exact_match_never_hits_a_longer_name(rules):
    assert mode(rules, f"{VIEW}::TestViewOpsSPYRE::test_storage_error_spyre") == "skip"
    assert mode(rules, f"{VIEW}::TestViewOpsSPYRE::test_storage_error_no_attribute_spyre") == "mandatory_success"


def test_glob_and_regex(rules):
    assert mode(rules, f"{VIEW}::TestViewOpsSPYRE::test_view_as_complex_spyre") == "exclude"
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_view_as_complex_spyre") == "mandatory_success"
    assert mode(rules, f"{VIEW}::TestOldViewOpsPRIVATEUSE1::test_resize_all_dtypes_and_devices_spyre") == "xfail"
    assert mode(rules, f"{VIEW}::TestOldViewOpsPRIVATEUSE1::test_resize_as_all_dtypes_and_devices_spyre") == "xfail"
    assert mode(rules, f"{VIEW}::TestOldViewOpsPRIVATEUSE1::test_resize_as_all_dtypes_spyre") == "mandatory_success"


def test_dtype_include_and_exclude(rules):
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_transposes_spyre_int64") == "xfail"
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_transposes_spyre_float16") == "mandatory_success"
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_flatten_spyre_float32") == "xfail"
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_flatten_spyre_float16") == "mandatory_success"
    # a variant over two dtypes is excluded by the filter if either is listed
    assert mode(rules, f"{VIEW}::TestOldViewOpsSPYRE::test_flatten_spyre_float32_float16") == "mandatory_success"


def test_exact_pattern_naming_a_variant_implies_its_dtype(rules):
    assert mode(rules, f"{VIEW}::TestViewOpsSPYRE::test_exact_variant_spyre_float64") == "xfail"
    assert mode(rules, f"{VIEW}::TestViewOpsPRIVATEUSE1::test_exact_variant_spyre_float32") == "mandatory_success"


def test_version_conditions(rules):
    test_id = f"{VIEW}::TestViewOpsSPYRE::test_maybe_view_chunk_cat_spyre"
    assert mode(rules, test_id, torch_version="2.13.0") == "mandatory_success"
    assert mode(rules, test_id, torch_version="2.14") == "skip"
    assert mode(rules, test_id, torch_version="2.14.0a0+git1234") == "skip"  # pre-releases count
    assert mode(rules, test_id, torch_version="2.15.1+cpu") == "skip"
    assert mode(rules, test_id, torch_version="release/2.14") == "skip"  # a release ref names its version
    assert mode(rules, test_id, torch_version="v2.13.0") == "mandatory_success"
    assert mode(rules, test_id) == "mandatory_success"  # the installed torch is 2.13
    with pytest.raises(ValueError, match="not a version number"):
        rules.decide(test_id, torch_version="main")  # callers map such refs with version_from_ref


def test_ops_filters_use_the_opinfo_name_and_its_variants(rules):
    base = "test/test_ops.py::TestCommonPRIVATEUSE1::"
    assert mode(rules, base + "test_dtypes_div_floor_rounding_spyre_float32", op="div.floor_rounding") == "xfail"
    assert mode(rules, base + "test_dtypes_div_no_rounding_mode_spyre_float32") == "xfail"  # op inferred from the entry
    assert mode(rules, base + "test_dtypes_add_spyre_float32", op="add") == "skip"  # unlisted in this file
    decision = rules.decide(base + "test_out_mul_spyre_float16", op="mul")
    assert (decision.mode, decision.op) == ("exclude", "mul")
    assert mode(rules, base + "test_out_add_spyre_float16", op="add") == "mandatory_success"


def test_more_specific_entry_wins_over_less_specific(rules):
    # TestCommon::test_out without filters says mandatory_success; the op-filtered entry is more specific
    decision = rules.decide("test/test_ops.py::TestCommonSPYRE::test_out_sub_spyre_float32", op="sub")
    assert decision.mode == "exclude" and decision.entry.endswith(line("- match: TestCommon::test_out"))


def test_unlisted_modes(rules):
    listed_file = rules.decide(f"{VIEW}::TestViewOpsSPYRE::test_never_mentioned_spyre")
    assert (listed_file.mode, listed_file.entry, listed_file.reason) == ("mandatory_success", None, None)
    assert listed_file.rules_file.endswith("rules.yaml" + line("- path: test/test_view_ops.py"))
    assert mode(rules, "test/test_ops.py::TestCommonSPYRE::test_never_mentioned_spyre") == "skip"
    other = rules.decide("test/test_nn.py::TestNNDeviceTypeSPYRE::test_x_spyre")
    assert (other.mode, other.entry, other.rules_file) == (UNLISTED, None, None)


def test_absolute_paths_are_covered_by_relative_rule_paths(rules):
    assert mode(rules, f"/home/ci/pytorch/{VIEW}::TestViewOpsSPYRE::test_unbind_spyre") == "skip"
    assert mode(rules, "/home/ci/pytorch/test/xtest/test_view_ops.py::TestViewOpsSPYRE::test_unbind_spyre") == UNLISTED


def test_tolerances_from_entry_then_global(rules):
    entry = rules.decide(f"{VIEW}::TestViewOpsSPYRE::test_conj_self_spyre_float32")
    assert (entry.tolerance.atol, entry.tolerance.rtol) == (0.01, None) and entry.tags == ("numerics_sensitive",)
    per_op = rules.decide("test/test_ops.py::TestCommonSPYRE::test_x_mul_spyre_float16", op="mul").tolerance
    assert (per_op.atol, per_op.rtol) == (1e-3, 1e-3)
    per_dtype = rules.decide("test/test_ops.py::TestCommonSPYRE::test_x_add_spyre_float32", op="add").tolerance
    assert (per_dtype.atol, per_dtype.rtol) == (1e-5, 1e-6)
    assert rules.decide("test/test_ops.py::TestCommonSPYRE::test_x_add_spyre_int64", op="add").tolerance is None


def test_global_exclude_unsupported(tmp_path):
    rules = load_rules(write(tmp_path / "g.yaml", """
        global:
          supported_dtypes: [float16, float32]
          supported_ops: [add, {name: mul, dtypes: [float16]}]
          exclude_unsupported: true
        files:
          - path: test/test_ops.py
            unlisted_test_mode: mandatory_success
            entries:
              - match: TestCommon::test_reenabled
                mode: xfail
                dtypes: {include: [float64]}
                reason: {category: numerics, text: "runs in float64 on purpose"}
        """))
    base = "test/test_ops.py::TestCommonSPYRE::"
    float64 = rules.decide(base + "test_plain_spyre_float64")
    assert (float64.mode, float64.reason.category) == ("exclude", "unsupported_dtype")
    assert float64.entry.endswith("g.yaml:2")
    assert rules.decide(base + "test_plain_spyre_float32").mode == "mandatory_success"
    assert rules.decide(base + "test_plain_spyre").mode == "mandatory_success"  # no dtype: nothing to check
    op = rules.decide(base + "test_out_sub_spyre_float32", op="sub")
    assert (op.mode, op.reason.category) == ("exclude", "unsupported_op")
    assert rules.decide(base + "test_out_mul_spyre_float32", op="mul").mode == "exclude"  # mul: float16 only
    assert rules.decide(base + "test_out_mul_spyre_float16", op="mul").mode == "mandatory_success"
    assert rules.decide(base + "test_reenabled_spyre_float64").mode == "xfail"  # an explicit include wins


def test_several_files_for_one_path_are_merged(tmp_path):
    write(tmp_path / "a.yaml", """
        files:
          - path: test/test_x.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestX::test_a, mode: skip, reason: {category: crash, text: a}}
        """)
    write(tmp_path / "b.yaml", """
        files:
          - path: test/test_x.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestX::test_b, mode: xfail, reason: {category: flaky, text: b}}
        """)
    rules = load_rules(tmp_path)
    assert rules.decide("test/test_x.py::TestXSPYRE::test_a_spyre").entry.endswith("a.yaml:5")
    assert rules.decide("test/test_x.py::TestXSPYRE::test_b_spyre").entry.endswith("b.yaml:5")


def test_relevance_targets_and_always_run(rules):
    [hit] = rules.relevance.targets_for("aten/src/ATen/native/BinaryOps.cpp")
    assert hit.tests == ("test/test_binary_ufuncs.py",) and hit.ops == ("add", "mul")
    assert hit.rule.endswith("rules.yaml" + line('- sources: ["aten/src/ATen/native/BinaryOps.cpp"'))
    hits = rules.relevance.targets_for("torch/_refs/nn/functional/__init__.py")
    assert [h.tests for h in hits] == [("test/test_binary_ufuncs.py",), ("test/test_ops.py",)]
    assert rules.relevance.targets_for("README.md") == []
    assert rules.relevance.always_run == ["test/test_view_ops.py::TestViewOps::test_contiguous_self"]


def test_global_config_api(rules):
    config = rules.global_config
    assert config.dtype_names() == ["float16", "float32", "int64"]
    assert config.op_dtypes("mul") == ["float16"] and config.op_dtypes("add") == ["float16", "float32", "int64"]
    assert config.op_spec("div.floor_rounding")[0].name == "div"
    assert config.op_spec("sub") is None and not config.exclude_unsupported


def test_decision_serialises(rules):
    record = rules.decide(f"{VIEW}::TestViewOpsSPYRE::test_view_copy_spyre_float16").to_dict()
    assert record["mode"] == "xfail_strict"
    assert record["reason"] == {"category": "unsupported_op", "text": "in-device copy",
                                "issue": "https://github.com/o/r/issues/80"}


@pytest.mark.parametrize("ref, version", [
    ("2.14", "2.14"), ("v2.14.0", "2.14.0"), ("v2.14.0-rc2", "2.14.0"), ("release/2.13", "2.13"),
    ("main", None), ("pr/123", None), ("0123abcd", None), (None, None), ("2", None),
])
def test_version_from_ref(ref, version):
    assert version_from_ref(ref) == version


def test_file_sections_with_a_glob_path(tmp_path):
    rules = load_rules(write(tmp_path / "g.yaml", """
        files:
          - path: "test/inductor/test_*.py"
            unlisted_test_mode: exclude
        """))
    assert rules.decide("test/inductor/test_torchinductor.py::TestX::test_a").mode == "exclude"
    assert rules.decide("/ci/pytorch/test/inductor/test_pattern_matcher.py::TestY::test_b").mode == "exclude"
    assert rules.decide("test/test_ops.py::TestCommon::test_a").mode == UNLISTED


def test_a_pattern_naming_a_test_that_ends_in_a_device_word_matches_its_spyre_variants(tmp_path):
    from testdefs import load_rules

    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        "version: 1\n"
        "files:\n"
        "  - path: test/test_x.py\n"
        "    unlisted_test_mode: mandatory_success\n"
        "    entries:\n"
        "      - match: TestX::test_compare_cpu\n"
        "        mode: skip\n"
        "        reason: {category: not_applicable, text: compares with the CPU result only}\n")
    rules = load_rules([rules_file])
    assert rules.decide("test/test_x.py::TestXPRIVATEUSE1::test_compare_cpu_spyre_float32").mode == "skip"
    assert rules.decide("test/test_x.py::TestXPRIVATEUSE1::test_compare_spyre_float32").mode == "mandatory_success"
