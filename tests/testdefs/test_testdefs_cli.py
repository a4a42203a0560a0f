"""`relay-cli testdefs ...`: exit statuses, one-line errors, text and JSON output."""
from __future__ import annotations

import json

import pytest

from relay.cli import main
from tests.testdefs.testdefs_helpers import TORCH_SPYRE_CONFIG, collecting_main, write

RULES = """
files:
  - path: test/test_view_ops.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: TestViewOps::test_view_copy
        mode: xfail_strict
        reason: {category: unsupported_op, text: "in-device copy", issue: "https://github.com/o/r/issues/80", since: "2.13"}
      - match: TestViewOps::test_conj_self
        mode: mandatory_success
        precision: {atol: 0.01, rtol: 0.001}
        tags: [numerics_sensitive]
      - match: TestViewOps::test_new
        mode: skip
        when: {torch: ">=2.14"}
        reason: {category: upstream_bug, text: "2.14 only"}
"""
VIEW_COPY = "test/test_view_ops.py::TestViewOpsPRIVATEUSE1::test_view_copy_spyre_float16"


@pytest.fixture
def rules(tmp_path):
    return write(tmp_path / "rules.yaml", RULES)


def test_validate_ok(rules, capsys):
    assert main(["testdefs", "validate", str(rules)]) == 0
    assert "1 rules file(s), 1 upstream file section(s), 3 entries: 0 conflict(s), 0 duplicate(s)" in capsys.readouterr().out


def test_validate_bundled_rules_by_default(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no relay.yaml here: the bundled testdefs/rules/pytorch
    monkeypatch.delenv("RELAY_RULES", raising=False)
    assert main(["testdefs", "validate", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sections"] >= 11 and data["conflicts"] == []


def test_validate_reports_every_problem_then_one_error_line(tmp_path, capsys):
    bad = write(tmp_path / "bad.yaml", """
        files:
          - path: test/test_x.py
            unlisted_test_mode: sometimes
            entries:
              - {match: "re:(", mode: skip, reason: {category: crash, text: x}}
        """)
    assert main(["testdefs", "validate", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{bad}:3: files[0].unlisted_test_mode: Input should be")
    assert err[1].startswith(f"{bad}:5: files[0].entries[0].match[0]: regular expression '(' does not compile")
    assert err[2] == f"relay-cli: error: 2 problems in the rules ({bad}) (fix each file:line above)"
    assert len(err) == 3


def test_validate_fails_on_conflicts(tmp_path, capsys):
    clash = write(tmp_path / "clash.yaml", """
        files:
          - path: test/test_x.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestX::test_a, mode: skip, reason: {category: crash, text: x}}
              - {match: TestXSPYRE::test_a, mode: xfail, reason: {category: flaky, text: y}}
        """)
    assert main(["testdefs", "validate", str(clash)]) == 1
    out = capsys.readouterr().out
    assert f"{clash}:5: conflict: TestX::test_a gets different modes from {clash}:5 (skip), {clash}:6 (xfail)" in out


def test_explain_text(rules, capsys):
    assert main(["testdefs", "explain", "--rules", str(rules), VIEW_COPY,
                 "test/test_view_ops.py::TestViewOpsSPYRE::test_conj_self_spyre_float32",
                 "test/test_view_ops.py::TestViewOpsSPYRE::test_other_spyre", "test/test_nn.py::TestNNSPYRE::test_a_spyre"]) == 0
    out = capsys.readouterr().out
    assert f"""{VIEW_COPY}
  normalised: test/test_view_ops.py::TestViewOps::test_view_copy
  mode:       xfail_strict
  decided by: {rules}:5 (match TestViewOps::test_view_copy)
  reason:     unsupported_op: in-device copy
  issue:      https://github.com/o/r/issues/80
  since:      2.13
""" in out
    assert f"  tolerance:  atol=0.01 rtol=0.001 ({rules}:8)\n  tags:       numerics_sensitive" in out
    assert f"  mode:       mandatory_success\n  decided by: unlisted_test_mode of {rules}:2" in out
    assert "  mode:       unlisted\n  decided by: no rules file covers this test file" in out


def test_explain_json_and_version(rules, capsys):
    test_id = "test/test_view_ops.py::TestViewOpsSPYRE::test_new_spyre"
    assert main(["testdefs", "explain", "--rules", str(rules), "--json", "--torch-version", "2.14", test_id]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert (record["mode"], record["entry"]) == ("skip", f"{rules}:12")
    assert main(["testdefs", "explain", "--rules", str(rules), "--torch-version", "soon", test_id]) == 2
    assert "relay-cli: error: torch version 'soon' is not a version number" in capsys.readouterr().err


def test_stale_from_an_ids_file(rules, tmp_path, capsys):
    ids = write(tmp_path / "ids.txt", f"{VIEW_COPY}\ntest/test_view_ops.py::TestViewOpsSPYRE::test_conj_self_spyre_int64\n")
    assert main(["testdefs", "stale", "--upstream", str(tmp_path), "--rules", str(rules), "--ids", str(ids)]) == 1
    out = capsys.readouterr().out
    assert f"{rules}:12: pattern: TestViewOps::test_new matches no collected test" in out
    assert "2 collected test(s): 1 stale entry" in out
    assert main(["testdefs", "stale", "--upstream", str(tmp_path), "--rules", str(rules), "--ids", str(ids),
                 "--torch-version", "2.13"]) == 0  # the 2.14-only entry is not checked on 2.13


def test_stale_needs_an_upstream_directory(rules, tmp_path, capsys):
    assert main(["testdefs", "stale", "--upstream", str(tmp_path / "nope"), "--rules", str(rules)]) == 2
    assert "relay-cli: error: --upstream" in capsys.readouterr().err


def test_import_torch_spyre_to_a_file(tmp_path, capsys):
    out = tmp_path / "view_ops.yaml"
    assert main(["testdefs", "import-torch-spyre", str(TORCH_SPYRE_CONFIG), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"wrote {out}" in err and "duplicate: TestViewOps::test_flatten_nonview" in err
    assert main(["testdefs", "validate", str(out)]) == 0


def test_import_json_and_bad_input(tmp_path, capsys):
    assert main(["testdefs", "import-torch-spyre", "--json", str(TORCH_SPYRE_CONFIG)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["yaml"].startswith("# Imported from") and len(data["report"]["duplicates"]) == 4
    assert main(["testdefs", "import-torch-spyre", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: (document): file not found" in capsys.readouterr().err
    not_spyre = write(tmp_path / "x.yaml", "files: []\n")
    assert main(["testdefs", "import-torch-spyre", str(not_spyre)]) == 2
    assert "expected a mapping with the key test_suite_config" in capsys.readouterr().err


def test_schema(tmp_path, capsys):
    assert main(["testdefs", "schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["title"] == "Spyre CI Relay testdefs rules file"
    target = tmp_path / "schema.json"
    assert main(["testdefs", "schema", "-o", str(target)]) == 0
    assert json.loads(target.read_text()) == printed


def test_stale_collects_and_leaves_files_that_fail_to_import_unchecked(tmp_path, capsys, collecting_main):
    upstream = tmp_path / "upstream"
    write(upstream / "test" / "test_ok.py", """
        import unittest

        class TestOk(unittest.TestCase):
            def test_here(self):
                pass
        """)
    write(upstream / "test" / "test_broken.py", "raise ImportError('needs a module this checkout lacks')\n")
    rules = write(tmp_path / "rules.yaml", """
        files:
          - path: test/test_ok.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestOk::test_here, mode: mandatory_success}
              - {match: TestOk::test_gone, mode: skip, reason: {category: crash, text: x}}
          - path: test/test_broken.py
            unlisted_test_mode: mandatory_success
            entries:
              - {match: TestBroken::test_anything, mode: skip, reason: {category: crash, text: x}}
        """)
    assert collecting_main(["testdefs", "stale", "--upstream", str(upstream), "--rules", str(rules), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["collected"] == 1
    assert data["collection_errors"] == ["test/test_broken.py"]
    assert [(s["kind"], s["subject"]) for s in data["stale"]] == [("pattern", "TestOk::test_gone")]


def test_explain_says_why_other_entries_do_not_apply(rules, capsys):
    test_id = "test/test_view_ops.py::TestViewOpsSPYRE::test_new_spyre"
    assert main(["testdefs", "explain", "--rules", str(rules), test_id]) == 0
    assert (f"  also names: {rules}:12 (skip, match TestViewOps::test_new): does not apply: "
            "when torch >=2.14 does not hold for torch 2.13.0") in capsys.readouterr().out
    assert main(["testdefs", "explain", "--rules", str(rules), "--json", "--torch-version", "2.14", test_id]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert record["entries"] == [{"ref": f"{rules}:12", "mode": "skip", "pattern": "TestViewOps::test_new",
                                  "applies": True, "why_not": None}]
