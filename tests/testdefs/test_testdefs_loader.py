"""Loading rules: every problem in every file is reported as file:line: field: expected."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import testdefs
from testdefs import Mode, RulesError, load_rules
from tests.testdefs.testdefs_helpers import REPO, write

GOOD = """
files:
  - path: test/test_ops.py
    unlisted_test_mode: skip
    entries:
      - match: TestCommon::test_dtypes
        mode: mandatory_success
"""


def problems_of(*paths: Path) -> list[str]:
    with pytest.raises(RulesError) as raised:
        load_rules(list(paths))
    assert isinstance(raised.value, ValueError)
    lines = str(raised.value).splitlines()
    assert lines == [str(p) for p in raised.value.problems]
    return lines


def test_valid_file_loads_with_line_refs(tmp_path):
    rules = load_rules(write(tmp_path / "ok.yaml", GOOD))
    [section] = rules.sections
    assert section.unlisted_test_mode is Mode.skip
    assert section.ref.endswith("ok.yaml:2")
    assert section.entries[0].ref.endswith("ok.yaml:5")


def test_malformed_yaml_names_file_and_line(tmp_path):
    bad = write(tmp_path / "broken.yaml", """
        files:
          - path: test/test_ops.py
            unlisted_test_mode: skip
            entries: [ {match: a, mode: skip
        """)
    [line] = problems_of(bad)
    assert line.startswith(f"{bad}:5: (document): not valid YAML")
    assert "line 4" in line  # where the unclosed construct began


def test_unknown_mode_is_reported_with_allowed_values(tmp_path):
    bad = write(tmp_path / "mode.yaml", """
        files:
          - path: test/test_ops.py
            unlisted_test_mode: skip
            entries:
              - match: TestFoo::test_bar
                mode: pass
        """)
    [line] = problems_of(bad)
    assert line.startswith(f"{bad}:6: files[0].entries[0].mode: Input should be 'mandatory_success'")
    assert "(got 'pass')" in line


def test_regex_that_does_not_compile(tmp_path):
    bad = write(tmp_path / "regex.yaml", """
        files:
          - path: test/test_ops.py
            unlisted_test_mode: skip
            entries:
              - match: ["TestFoo::ok", "re:test_(unclosed"]
                mode: skip
                reason: {category: crash, text: x}
        """)
    [line] = problems_of(bad)
    assert line.startswith(f"{bad}:5: files[0].entries[0].match[1]: regular expression 'test_(unclosed' does not compile")


def test_all_problems_of_all_files_are_reported(tmp_path):
    first = write(tmp_path / "a.yaml", """
        files:
          - path: test/test_ops.py
            entries:
              - match: TestFoo::test_bar
                mdoe: skip
              - match: TestFoo::test_baz
                mode: xfail
                dtypes: {include: [float63]}
                when: {torch: "newer than 2"}
                reason: {category: numerics, text: x, issue: "not a url"}
              - match: TestFoo::test_qux
                mode: skip
        """)
    second = write(tmp_path / "b.yaml", "files: []\nfiles: []\n")
    lines = problems_of(tmp_path)
    assert lines == [
        f"{first}:2: files[0].unlisted_test_mode: missing required field 'unlisted_test_mode'",
        f"{first}:4: files[0].entries[0].mode: missing required field 'mode'",
        f"{first}:5: files[0].entries[0].mdoe: unknown field 'mdoe'; expected one of: match, mode, reason, "
        "when, dtypes, ops, precision, generate, tags, note",
        f"{first}:8: files[0].entries[1].dtypes.include[0]: unknown dtype 'float63'; expected one of "
        "float64, float32, float16, bfloat16, complex128, complex64, complex32, int64, int32, int16, int8, "
        "uint8, uint16, uint32, uint64, bool, float8_e4m3fn, float8_e5m2",
        f"{first}:9: files[0].entries[1].when.torch: 'newer than 2' is not a version specifier; "
        "expected e.g. '>=2.14' or '>=2.13,<2.14'",
        f"{first}:10: files[0].entries[1].reason.issue: 'not a url' is not an http(s) URL",
        f"{first}:11: files[0].entries[2]: mode skip needs a reason: {{category, text}} (issue, since optional)",
        f"{second}:2: files: duplicate key (first given on line 1); give each key once",
    ]


def test_unknown_reason_category_and_missing_text(tmp_path):
    bad = write(tmp_path / "reason.yaml", """
        files:
          - path: test/test_ops.py
            unlisted_test_mode: skip
            entries:
              - match: TestFoo::test_bar
                mode: xfail
                reason: {category: cosmic_rays}
        """)
    lines = problems_of(bad)
    assert lines[0].startswith(f"{bad}:7: files[0].entries[0].reason.category: Input should be 'unsupported_op'")
    assert lines[1] == f"{bad}:7: files[0].entries[0].reason.text: missing required field 'text'"


def test_top_level_must_be_a_mapping(tmp_path):
    bad = write(tmp_path / "list.yaml", "- files\n")
    [line] = problems_of(bad)
    assert line.startswith(f"{bad}:1: (document): Input should be a valid dictionary")


def test_missing_file_and_empty_directory(tmp_path):
    [line] = problems_of(tmp_path / "nope.yaml")
    assert line == f"{tmp_path / 'nope.yaml'}: (document): file not found"
    (tmp_path / "empty").mkdir()
    [line] = problems_of(tmp_path / "empty")
    assert "no rules files (*.yaml, *.yml) found" in line


def test_directories_merge_recursively(tmp_path):
    write(tmp_path / "one" / "a.yaml", GOOD)
    write(tmp_path / "two" / "b.yml", GOOD.replace("test_ops.py", "test_torch.py"))
    write(tmp_path / "notes.txt", "not rules")
    rules = load_rules(tmp_path)
    assert [s.path for s in rules.sections] == ["test/test_ops.py", "test/test_torch.py"]
    assert len(rules.sources) == 2


def test_scalar_conveniences_and_number_like_text(tmp_path):
    rules = load_rules(write(tmp_path / "r.yaml", """
        global:
          supported_dtypes: [float16, {name: float32, precision: {atol: 1e-5}}]
          supported_ops: [add, {name: mul, dtypes: [float16]}]
        files:
          - path: test/test_x.py
            unlisted_test_mode: mandatory_success
            entries:
              - match: TestX::test_y
                mode: xfail
                tags: slow_on_device
                reason: {category: numerics, text: drift, since: 2.13}
        """))
    entry = rules.entries()[0].model
    assert entry.match == ["TestX::test_y"] and entry.tags == ["slow_on_device"]
    assert entry.reason.since == "2.13"
    assert rules.global_config.dtype_names() == ["float16", "float32"]
    assert rules.global_config.supported_dtypes["float32"][0].atol == 1e-5
    assert rules.global_config.op_dtypes("mul") == ["float16"]
    assert rules.global_config.op_dtypes("add") == ["float16", "float32"]


def test_json_schema_describes_the_yaml_keys():
    schema = testdefs.json_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert set(schema["properties"]) == {"version", "global", "relevance", "files"}
    assert schema["$defs"]["Mode"]["enum"] == ["mandatory_success", "xfail", "xfail_strict", "skip", "exclude"]
    assert "timeout" in schema["$defs"]["Category"]["enum"]
    json.dumps(schema)  # serialisable as is


def test_bundled_example_and_pytorch_rules_are_valid():
    example = load_rules(REPO / "testdefs" / "examples" / "example.yaml")
    assert example.conflicts() == []
    bundled = load_rules(REPO / "testdefs" / "rules" / "pytorch")
    assert [c for c in bundled.conflicts() if c.kind == "conflict"] == []
    assert {"test/test_ops.py", "test/test_view_ops.py", "test/test_torch.py"} <= {s.path for s in bundled.sections}


def test_committed_schema_file_is_current():
    """testdefs/rules.schema.json is what editors point at; regenerate with `relay-cli testdefs schema -o`."""
    committed = json.loads((REPO / "testdefs" / "rules.schema.json").read_text(encoding="utf-8"))
    assert committed == testdefs.json_schema()
