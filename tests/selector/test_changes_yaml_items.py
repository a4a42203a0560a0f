"""native_functions.yaml-shaped files compared item by item: only differing items are parsed."""
from __future__ import annotations

import pytest

from selector.changes.data_files import same_content
from selector.changes.native_yaml import changed_ops
from selector.changes.yaml_items import YamlItemError, diff_items, top_level_items

HEADER = "# See README.md in this directory for more guidance\n\n"
ADD = "- func: add.Tensor(Tensor self, Tensor other) -> Tensor\n  variants: function, method\n"
MUL = "- func: mul.Tensor(Tensor self, Tensor other) -> Tensor\n  dispatch:\n    CPU: mul_cpu\n"
SIN = "- func: sin(Tensor self) -> Tensor\n  structured_delegate: sin.out\n"
# a tag SafeLoader refuses: parsing this item raises, so a test can tell whether it was parsed
UNSAFE = "- func: unsafe(Tensor self) -> Tensor\n  python: !!python/object:os.system {}\n"


def test_items_are_cut_at_each_top_level_dash_with_their_first_line():
    items = top_level_items(HEADER + ADD + "\n" + MUL)
    assert [(i.line, i.text.splitlines()[0]) for i in items] == [(3, ADD.splitlines()[0]), (6, MUL.splitlines()[0])]


@pytest.mark.parametrize("text", ["func: add\n", "%YAML 1.2\n---\n- a\n", "- [a,\nb]\n", "# only a comment\n"])
def test_a_file_of_another_shape_is_left_to_a_whole_parse(text):
    assert top_level_items(text) is None
    assert diff_items(text, text) is None


def test_items_with_the_same_text_on_both_sides_are_not_parsed():
    before = HEADER + UNSAFE + ADD + MUL
    after = HEADER + UNSAFE + ADD + MUL.replace("mul_cpu", "mul_cpu_v2")
    diff = diff_items(before, after)
    assert [(line, entry["dispatch"]) for line, entry in diff.removed] == [(7, {"CPU": "mul_cpu"})]
    assert [(line, entry["dispatch"]) for line, entry in diff.added] == [(7, {"CPU": "mul_cpu_v2"})]
    assert changed_ops(before, after, "func") == ({"mul": ("mul.Tensor modified", 7)}, [])


def test_a_moved_or_reformatted_entry_is_no_change_and_an_added_one_names_its_line():
    before = HEADER + ADD + MUL + SIN
    moved = HEADER + SIN + ADD.replace("function, method", "function, method  # both") + MUL
    assert changed_ops(before, moved, "func") == ({}, [])
    added = HEADER + ADD + MUL + SIN + "- func: cos(Tensor self) -> Tensor\n"
    assert changed_ops(before, added, "func") == ({"cos": ("cos added", 10)}, [])
    assert changed_ops(added, before, "func") == ({"cos": ("cos removed", 10)}, [])


def test_a_broken_changed_item_names_its_line_in_the_whole_file():
    before = HEADER + ADD + MUL
    after = HEADER + ADD + MUL.replace("CPU: mul_cpu", "CPU: [mul_cpu")
    with pytest.raises(YamlItemError) as raised:
        diff_items(before, after)
    assert raised.value.args[1] == "new" and str(raised.value.args[0]).startswith("line 8:")
    changed, errors = changed_ops(before, after, "func")  # parsed whole: the error is reported, as before
    assert errors and errors[0].startswith("line 8:")


def test_an_alias_to_another_item_falls_back_to_a_whole_parse():
    before = HEADER + "- func: a(Tensor self) -> Tensor\n  tags: &core [core]\n" \
        + "- func: b(Tensor self) -> Tensor\n  tags: *core\n"
    after = before.replace("b(Tensor self)", "b(Tensor self, int dim)")
    assert diff_items(before, after) is None
    assert changed_ops(before, after, "func") == ({"b": ("b modified", 5)}, [])


def test_same_content_keeps_order_and_ignores_comments():
    before = HEADER + ADD + MUL
    assert same_content("x.yaml", before, before.replace(HEADER, "# another comment\n"))
    assert same_content("x.yaml", before, HEADER + ADD + "# note\n" + MUL)
    assert not same_content("x.yaml", before, HEADER + MUL + ADD)  # a reordered list is other data
    assert not same_content("x.yaml", before, HEADER + ADD + MUL.replace("mul_cpu", "mul_other"))
