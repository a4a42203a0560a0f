"""The torch-spyre importer, on torch-spyre's real test_view_ops config (tests/fixtures/torch-spyre)."""
from __future__ import annotations

import re

import pytest
import yaml

from testdefs import load_rules
from testdefs.torch_spyre_import import ImportError_, convert, infer_category
from tests.testdefs.testdefs_helpers import TORCH_SPYRE_CONFIG, write


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    text = TORCH_SPYRE_CONFIG.read_text(encoding="utf-8")
    rules_yaml, report = convert(text, "test_view_ops_config.yaml")
    path = tmp_path_factory.mktemp("import") / "view_ops.yaml"
    path.write_text(rules_yaml, encoding="utf-8")
    return text, rules_yaml, report, load_rules(path)


def _listed_names(text: str) -> dict[str, str]:
    """Every name torch-spyre lists (not commented out) -> its own trailing comment ('' if none)."""
    out = {}
    for line in text.splitlines():
        found = re.match(r"\s*- (Test\w+::\w+)\s*(?:#\s*(.*))?$", line)
        if found and found[1] not in out:
            out[found[1]] = (found[2] or "").strip()
    return out


def test_the_output_is_valid_rules_for_the_same_file(converted):
    _, rules_yaml, _, rules = converted
    [section] = rules.sections
    assert section.path == "test/test_view_ops.py"  # ${TORCH_ROOT}/ removed
    assert section.unlisted_test_mode.value == "mandatory_success"
    assert rules_yaml.startswith("# Imported from test_view_ops_config.yaml")


def test_every_listed_name_keeps_its_mode(converted):
    text, _, _, rules = converted
    config = yaml.safe_load(text)["test_suite_config"]["files"][0]["tests"]
    expected: dict[str, str] = {}
    for item in config:
        for name in item["names"]:
            previous = expected.get(name)
            expected[name] = item.get("mode", "mandatory_success") if previous in (None, "mandatory_success") else previous
    for name, mode in expected.items():
        cls, method = name.split("::")
        decision = rules.decide(f"test/test_view_ops.py::{cls}PRIVATEUSE1::{method}_spyre_float16")
        assert decision.mode == mode, name


def test_every_comment_survives_as_reason_text(converted):
    text, rules_yaml, _, rules = converted
    for name, comment in _listed_names(text).items():
        if not comment:
            continue
        cls, method = name.split("::")
        decision = rules.decide(f"test/test_view_ops.py::{cls}SPYRE::{method}_spyre_float16")
        if decision.mode == "mandatory_success":  # no reason needed: kept as a comment above the entry
            assert f"# torch-spyre: {comment.rstrip()}" in rules_yaml, name
        else:
            assert comment.rstrip() in decision.reason.text, name


def test_reasons_are_structured(converted):
    _, _, _, rules = converted

    def reason(name):
        cls, method = name.split("::")
        return rules.decide(f"test/test_view_ops.py::{cls}SPYRE::{method}_spyre").reason

    segfault = reason("TestOldViewOps::test_atleast")
    assert (segfault.category, segfault.issue) == ("crash", "https://github.com/torch-spyre/torch-spyre/issues/728")
    assert reason("TestOldViewOps::test_python_types").category == "unsupported_dtype"  # "does not support dtype Double"
    assert reason("TestViewOps::test_advanced_indexing_assignment").category == "unsupported_op"
    assert reason("TestOldViewOps::test_flatten").category == "numerics"
    assert reason("TestViewOps::test_maybe_view_chunk_cat").category == "upstream_bug"
    # a group heading inside the names list applies to the names after it
    aborts = reason("TestViewOps::test_T_view")
    assert aborts.category == "crash" and "heap corruption in spyre_aware_repr" in aborts.text
    # the comment on the line after an item's mode belongs to the next item
    assert reason("TestViewOps::test_view_as_complex").text == "segmentation faults with @onlyNativeDeviceTypes"


def test_duplicates_commented_names_and_unconverted_fields_are_reported(converted):
    _, _, report, rules = converted
    assert len(report.duplicates) == 4
    assert any(d.startswith("TestViewOps::test_flatten_nonview at test_view_ops_config.yaml:29 (skip)")
               for d in report.duplicates)
    # both comments of a duplicate are kept
    flat = rules.decide("test/test_view_ops.py::TestViewOpsSPYRE::test_flatten_nonview_spyre").reason.text
    assert "In-device copy not implemented" in flat and "onlyNativeDeviceTypes" in flat
    assert any("TestOldViewOps::test_broadcast_to" in c for c in report.commented_out)
    assert rules.decide("test/test_view_ops.py::TestOldViewOpsSPYRE::test_broadcast_to_spyre").mode == "mandatory_success"
    assert report.not_converted == ["labels ['trunk'] (suite-level CI filter)"]
    assert report.guessed == []  # every skip in this config carries some comment


def test_dtype_edits_become_more_specific_entries(converted):
    _, _, _, rules = converted
    base = "test/test_view_ops.py::TestOldViewOpsSPYRE::test_transposes_errors_spyre_"
    excluded = rules.decide(base + "int64")
    assert excluded.mode == "exclude" and "random_.from" in excluded.reason.text
    assert excluded.reason.issue == "https://github.com/torch-spyre/torch-spyre/issues/549"
    assert rules.decide(base + "float16").mode == "mandatory_success"
    included = rules.decide("test/test_view_ops.py::TestViewOpsSPYRE::test_conj_self_spyre_float64")
    assert included.mode == "mandatory_success" and included.pattern == "TestViewOps::test_conj_self"


def test_global_section_is_kept(converted):
    _, _, _, rules = converted
    config = rules.global_config
    assert config.dtype_names() == ["float16", "int64"]
    assert sorted(config.supported_ops) == ["add", "mul", "sub"]
    assert config.tolerance("add", "float16").atol == pytest.approx(1e-3)
    assert config.op_dtypes("add") == ["float16", "int64"]


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
    assert decision.mode == "xfail" and decision.tags == ("needs_reason",)
    tagged = rules.decide("tests/test_x.py::TestXSPYRE::test_b_spyre")
    assert (tagged.mode, tagged.tags) == ("mandatory_success", ("model_x", "smoke_test"))
    assert rules.sections[0].unlisted_test_mode.value == "xfail"
    assert report.guessed and "torch-spyre's code default xfail" in report.notes[0]
    assert any("edits.modules" in n for n in report.not_converted)


@pytest.mark.parametrize("text, message", [
    ("files: []\n", "expected a mapping with the key test_suite_config"),
    ("test_suite_config: [unclosed\n", "not valid YAML"),
])
def test_input_that_is_not_a_torch_spyre_config(text, message):
    with pytest.raises(ImportError_, match=message):
        convert(text, "bad.yaml")


def test_category_inference():
    assert infer_category("Signal Received: 11 (Segmentation fault)") == "crash"
    assert infer_category("NotImplementedError: Could not run 'aten::index.Tensor_out'") == "unsupported_op"
    assert infer_category("Complex not supported") == "unsupported_dtype"
    assert infer_category("AssertionError: Tensor-likes are not close") == "numerics"
    assert infer_category("looks fine to me") is None
