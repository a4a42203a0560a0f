"""Verdicts, reason categories, the proposed testdefs patch and junit.xml."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import yaml

from relay.execution.runner import TestRecord
from relay.reporting.artifacts import write_junit, write_results_jsonl
from relay.reporting.patch import Judged, build_patch, dump_patch
from relay.reporting.verdicts import guess_category, verdict
from testdefs.ids import normalise
from testdefs.schema import Entry

OPS = "test/test_ops.py::TestCommonPRIVATEUSE1::"


def rec(name: str, outcome: str, message: str | None = None, **kw) -> TestRecord:
    return TestRecord(OPS + name, outcome, 0.25, message=message, **kw)


def judged(record: TestRecord, mode: str | None = None, baseline: frozenset = frozenset(), **kw) -> Judged:
    normalised = normalise(record.test_id)
    return Judged(record, verdict(record, mode, set(baseline), normalised), normalised, **kw)


def test_verdicts_follow_rules_and_baseline():
    failing = rec("test_add_spyre_float32", "failed", "boom")
    assert verdict(failing, None, set(), normalise(failing.test_id)) == "new_failure"
    assert verdict(failing, "mandatory_success", set(), normalise(failing.test_id)) == "new_failure"
    assert verdict(failing, "xfail", set(), normalise(failing.test_id)) == "known_failure"
    assert verdict(failing, None, {"test/test_ops.py::TestCommon::test_add"}, normalise(failing.test_id)) == "still_failing"
    assert verdict(rec("t_spyre_float16", "xfailed"), "xfail", set(), "x") == "known_failure"
    assert verdict(rec("t_spyre_float16", "xpassed"), "xfail_strict", set(), "x") == "fixed"
    assert verdict(rec("t_spyre_float16", "xpassed", strict_xfail=True), None, set(), "x") == "fixed"
    assert verdict(rec("t_spyre_float16", "xpassed"), "xfail", set(), "x") == "ok"
    assert verdict(rec("t_spyre_float16", "passed", flaky=True), None, set(), "x") == "ok"
    assert verdict(rec("t_spyre_float16", "crashed"), "skip", set(), "x") == "known_failure"


def test_categories_are_guessed_from_the_error():
    assert guess_category(rec("a", "failed", "NotImplementedError: Could not run 'aten::cumsum'")) == "unsupported_op"
    assert guess_category(rec("a", "failed", "RuntimeError: Spyre backend does not support dtype Double")) == "unsupported_dtype"
    assert guess_category(rec("a", "failed", "AssertionError: Tensor-likes are not close!")) == "numerics"
    assert guess_category(rec("a", "crashed", "interpreter killed by SIGSEGV")) == "crash"
    assert guess_category(rec("a", "timed_out", "no result after 300s")) == "timeout"
    assert guess_category(rec("a", "failed", "AssertionError: 3 != 4")) == "upstream_bug"


def test_patch_proposes_valid_entries_and_promotions():
    items = [
        judged(rec("test_cumsum_spyre_float16", "failed", "NotImplementedError: aten::cumsum")),
        judged(rec("test_cumsum_spyre_float32", "failed", "NotImplementedError: aten::cumsum")),
        judged(rec("test_cumsum_spyre_int64", "passed")),
        judged(rec("test_abort_spyre_float16", "crashed", "interpreter killed by SIGABRT")),
        judged(rec("test_flaky_spyre_float16", "passed", "flaky: ...", flaky=True)),
        judged(rec("test_view_spyre_float16", "xpassed"), "xfail_strict",
               rule_entry="testdefs/rules/demo/test_ops.yaml:12", rule_pattern="TestCommon::test_view"),
    ]
    patch = build_patch(items, from_ref="2.13", to_ref="v2.14.0", run_id="r1")
    (file_patch,) = patch["add"]
    assert file_patch["path"] == "test/test_ops.py"
    by_match = {e["match"]: e for e in file_patch["entries"]}
    assert set(by_match) == {"TestCommon::test_cumsum", "TestCommon::test_abort"}
    cumsum = by_match["TestCommon::test_cumsum"]
    assert cumsum["mode"] == "xfail" and cumsum["dtypes"] == {"include": ["float16", "float32"]}
    assert cumsum["reason"] == {"category": "unsupported_op", "text": "NotImplementedError: aten::cumsum", "since": "2.14"}
    assert by_match["TestCommon::test_abort"]["mode"] == "skip"
    for entry in file_patch["entries"]:  # loadable by testdefs once the evidence list is dropped
        Entry.model_validate({k: v for k, v in entry.items() if k != "failing"})
    assert patch["promote"] == [{"test": OPS + "test_view_spyre_float16", "entry": "testdefs/rules/demo/test_ops.yaml:12",
                                 "match": "TestCommon::test_view", "mode": "mandatory_success",
                                 "reason": "passes now under xfail_strict: promote the entry"}]
    assert yaml.safe_load(dump_patch(patch)) == patch


def test_patch_splits_the_opinfo_op_off_the_method():
    ops = ("softmax.with_dtype", "mul", "addcmul")
    items = [judged(rec(f"test_compare_cpu_{name}_spyre_float32", outcome, "NotImplementedError: x"), ops=ops)
             for name, outcome in (("softmax_with_dtype", "failed"), ("addcmul", "failed"), ("mul", "passed"))]
    (entry,) = build_patch(items, from_ref="2.13", to_ref="2.14", run_id="r")["add"][0]["entries"]
    assert entry["match"] == "TestCommon::test_compare_cpu"
    assert entry["ops"] == {"include": ["addcmul", "softmax.with_dtype"]}
    Entry.model_validate({k: v for k, v in entry.items() if k != "failing"})


def test_results_jsonl_and_junit(tmp_path):
    items = [judged(rec("test_a_spyre_float16", "passed", sim_stats={"cycles": 10})),
             judged(rec("test_b_spyre_float16", "failed", "boom", traceback="Traceback\nboom")),
             judged(rec("test_c_spyre_float16", "crashed", "interpreter killed by SIGSEGV")),
             judged(rec("test_d_spyre_float16", "xfailed", "known"), "xfail")]
    write_results_jsonl(items, tmp_path / "results.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["id"].rsplit("::", 1)[1], r["outcome"], r["verdict"]) for r in lines] == [
        ("test_a_spyre_float16", "passed", "ok"), ("test_b_spyre_float16", "failed", "new_failure"),
        ("test_c_spyre_float16", "crashed", "new_failure"), ("test_d_spyre_float16", "xfailed", "known_failure")]
    assert lines[0]["sim_stats"] == {"cycles": 10}
    write_junit(items, tmp_path / "junit.xml", name="spyre")
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "1")
    crashed = suite.findall("testcase")[2]
    assert crashed.get("classname") == "test/test_ops.py::TestCommonPRIVATEUSE1"
    assert crashed.find("error").get("type") == "crashed"
