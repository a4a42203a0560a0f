"""testdefs.safe_yaml: the same data as yaml.safe_load, lines for every part, and limits that hold."""
from __future__ import annotations

import time

import yaml

from testdefs.safe_yaml import LIBYAML, Limits, parse_yaml

TEXT = """\
base: &base {mode: xfail, tags: [a, b]}
files:
  - path: test/test_a.py
    when: 2024-01-05
    n: 12
    f: 1.5
    on: true
    none: ~
    entry:
      <<: *base
      mode: skip
  - *base
"""


def test_same_data_as_safe_load_with_lines():
    parsed = parse_yaml(TEXT, "t.yaml")
    assert parsed.problems == []
    assert parsed.data == yaml.safe_load(TEXT)  # merge keys, dates, numbers, booleans, null, aliases
    lines = parsed.lines
    assert lines.line_of(("files", 0, "path")) == 3
    assert lines.line_of(("files", 0, "entry", "mode")) == 11
    assert lines.line_of(("files", 0, "entry", "tags")) == 1  # merged from the anchor on line 1
    assert lines.line_of(("files", 1, "mode")) == 1  # through the alias
    assert lines.line_of(("files", 0, "missing", "deeper")) == 3  # the deepest part that exists
    assert LIBYAML  # the C parser is used where PyYAML has it (it does in this environment)


def test_duplicate_keys_are_found_once_each_even_through_aliases():
    text = "a: &x {k: 1, k: 2}\nb: [*x, *x, *x]\n"
    problems = parse_yaml(text, "d.yaml").problems
    assert [str(p) for p in problems] == ["d.yaml:1: a.k: duplicate key (first given on line 1); give each key once"]


def test_limits_stop_early_with_a_line():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(9))
    started = time.process_time()
    [problem] = parse_yaml(bomb, "bomb.yaml", Limits(max_nodes=100_000)).problems
    assert problem.line is not None and "more than 100,000 nodes" in problem.message
    assert time.process_time() - started < 5  # generous: the point is that it does not expand 10^10 nodes
    [problem] = parse_yaml("a: [*x]\n", "u.yaml").problems
    assert "names no anchor" in problem.message
    many = "a: &a 1\nb: [" + ", ".join(["*a"] * 20) + "]\n"
    [problem] = parse_yaml(many, "m.yaml", Limits(max_aliases=10)).problems
    assert (problem.line, "more than 10 aliases" in problem.message) == (2, True)
    [problem] = parse_yaml("x" * 100, "big.yaml", Limits(max_bytes=10)).problems
    assert "the limit is" in problem.message


def test_only_plain_tags():
    for text in ("a: !!python/object/apply:os.system [ls]\n", "a: !custom x\n", "a: !!set {x}\n"):
        [problem] = parse_yaml(text, "t.yaml").problems
        assert problem.line == 1 and "not allowed" in problem.message, text
