"""Every malformed input ends in one line naming file:line and the problem, exit 2, no traceback.

The table holds the kinds of mistakes found in hand-written torch-spyre configs and rules files
(wrong types, misspelt modes, missing names, encodings, YAML tricks). Each row is fed to the real
command, `relay-cli testdefs import-torch-spyre` or `relay-cli testdefs validate`.
"""
from __future__ import annotations

import pytest

from relay.cli import main

GOOD_HEAD = "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_x.py\n      unlisted_test_mode: skip\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9))

# (id, file text or bytes, line expected in the message, words expected in the message)
CONFIGS = [
    ("not-yaml", "test_suite_config: [unclosed\n", 2, "not valid YAML"),
    ("not-utf8", b"test_suite_config:\n  files: []\n  # caf\xe9\n", 3, "not UTF-8"),
    ("empty", "", None, "expected a mapping with the key test_suite_config"),
    ("top-level-list", "- a\n- b\n", 1, "expected a mapping with the key test_suite_config"),
    ("config-not-mapping", "test_suite_config: 5\n", 1, "test_suite_config: Input should be a valid dictionary"),
    ("files-not-a-list", 'test_suite_config:\n  files: "notalist"\n', 2, "files: Input should be a valid list"),
    ("file-not-mapping", "test_suite_config:\n  files:\n    - test/test_x.py\n", 3, "files[0]: Input should be"),
    ("file-without-path", "test_suite_config:\n  files:\n    - unlisted_test_mode: skip\n", 3,
     "missing required field 'path'"),
    ("bad-unlisted-mode", "test_suite_config:\n  files:\n    - path: a.py\n      unlisted_test_mode: sometimes\n", 4,
     "unlisted_test_mode: Input should be"),
    ("tests-not-a-list", GOOD_HEAD + "      tests: {names: [A::b]}\n", 5, "tests: Input should be a valid list"),
    ("item-without-names", GOOD_HEAD + "      tests:\n        - mode: skip\n", 6, "missing required field 'names'"),
    ("names-empty", GOOD_HEAD + "      tests:\n        - names: []\n", 6, "names: List should have at least 1 item"),
    ("names-a-string", GOOD_HEAD + "      tests:\n        - names: TestX::test_a\n", 6, "names: Input should be a valid list"),
    ("name-not-a-string", GOOD_HEAD + "      tests:\n        - names: [{a: 1}]\n", 6, "names[0]: Input should be a valid string"),
    ("mode-misspelt", GOOD_HEAD + "      tests:\n        - names: [TestX::test_a]\n          mode: skipp\n", 7,
     "mode: Input should be 'mandatory_success', 'xfail', 'xfail_strict' or 'skip'"),
    ("mode-a-number", GOOD_HEAD + "      tests:\n        - names: [TestX::test_a]\n          mode: 5\n", 7, "mode: Input should be"),
    ("regex-name", GOOD_HEAD + "      tests:\n        - names: ['re:.*']\n          mode: skip\n", 6,
     "is not a test name (Class::method or method)"),
    ("name-with-space", GOOD_HEAD + "      tests:\n        - names: ['TestX::test a']\n", 6, "is not a test name"),
    ("unknown-item-key", GOOD_HEAD + "      tests:\n        - names: [TestX::test_a]\n          modes: skip\n", 7,
     "unknown field 'modes'; expected one of: names, mode"),
    ("unknown-edit-key", GOOD_HEAD + "      tests:\n        - names: [TestX::test_a]\n          edits: {dtype: {}}\n", 7,
     "unknown field 'dtype'"),
    ("unknown-dtype", GOOD_HEAD + "      tests:\n        - names: [TestX::test_a]\n          edits:\n            dtypes:\n"
     "              include: [float99]\n", 9, "unknown dtype 'float99'"),
    ("global-dtypes-not-a-list", "test_suite_config:\n  global:\n    supported_dtypes: float16\n", 3,
     "supported_dtypes: Input should be a valid list"),
    ("duplicate-key", GOOD_HEAD + "      unlisted_test_mode: xfail\n", 5, "duplicate key (first given on line 4)"),
    ("python-tag", "test_suite_config: !!python/object/apply:os.system [echo hi]\n", 1, "is not allowed"),
    ("alias-bomb", BOMB, None, "more than 10,000,000 nodes"),
    ("two-documents", "test_suite_config: {}\n---\ntest_suite_config: {}\n", 2, "more than one YAML document"),
]

RULES = [
    ("rules-not-utf8", b"files:\n  - path: a.py\n    unlisted_test_mode: skip # \xff\n", 3, "not UTF-8"),
    ("rules-alias-bomb", BOMB, None, "more than 10,000,000 nodes"),
    ("rules-recursive-alias", "files: &f [*f]\n", 1, "recursive alias"),
    ("rules-mode-misspelt", "files:\n  - path: a.py\n    unlisted_test_mode: skipp\n", 3, "unlisted_test_mode: Input should be"),
    ("rules-files-not-a-list", 'files: "notalist"\n', 1, "files: Input should be a valid list"),
    ("rules-entry-without-match", "files:\n  - path: a.py\n    unlisted_test_mode: xfail\n    entries:\n      - mode: skip\n"
     "        reason: {category: crash, text: x}\n", 5, "missing required field 'match'"),
    ("rules-unknown-key", "files:\n  - path: a.py\n    unlisted_test_mode: xfail\n    entries:\n      - match: A::b\n"
     "        mode: mandatory_success\n        tgas: [x]\n", 7, "unknown field 'tgas'"),
    ("rules-deep-nesting", "files: " + "[" * 300 + "]" * 300 + "\n", 1, "nested more than 200 levels"),
]


def _write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / f"{name}.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _check(capsys, path, line: int | None, words: str) -> None:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    where = f"{path}:{line}:" if line else f"{path}:"
    assert lines[0].startswith(f"relay-cli: error: {where}"), err
    assert words in lines[0], err


@pytest.mark.parametrize("name, content, line, words", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_malformed_torch_spyre_config(tmp_path, capsys, name, content, line, words):
    path = _write(tmp_path, name, content)
    assert main(["testdefs", "import-torch-spyre", str(path)]) == 2
    _check(capsys, path, line, words)


@pytest.mark.parametrize("name, content, line, words", RULES, ids=[r[0] for r in RULES])
def test_malformed_rules_file(tmp_path, capsys, name, content, line, words):
    path = _write(tmp_path, name, content)
    assert main(["testdefs", "validate", str(path)]) == 2
    _check(capsys, path, line, words)


def test_regex_names_only_when_asked(tmp_path, capsys):
    path = _write(tmp_path, "regex", GOOD_HEAD + "      tests:\n        - names: ['TestX::test_a.*']\n"
                  "          mode: xfail  # NotImplementedError\n")
    assert main(["testdefs", "import-torch-spyre", "--allow-regex", "-o", str(tmp_path / "out.yaml"), str(path)]) == 0
    assert "match:\n    - re:TestX::(?:test_a.*).*\n" in (tmp_path / "out.yaml").read_text()


def test_a_missing_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "missing.yaml"
    assert main(["testdefs", "import-torch-spyre", str(path)]) == 2
    _check(capsys, path, None, "file not found")
