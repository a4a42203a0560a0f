"""A renamed or moved test keeps its testdefs rule and its history on spyre, and says so."""
from __future__ import annotations

import yaml

from selector.history import History
from selector.renames import translate
from selector.stages.base import SelectContext
from selector.stages.diff import DiffStage
from selector.stages.rules import RulesStage
from selector.upstream import open_upstream
from testdefs import load_rules
from tests.selector.selector_git_helpers import device_test_file, two_refs

F = "test/test_foo.py"
BEFORE = device_test_file('''
class TestFoo(TestCase):
    def test_old_name(self, device):
        x = torch.ones(3, device=device)
        self.assertEqual(x.sum().item(), 3)

    def test_stays(self, device):
        pass
''', tail="instantiate_device_type_tests(TestFoo, globals())\n")
AFTER = BEFORE.replace("def test_old_name(", "def test_new_name(")
# one xfail entry for the old name (line 6 of the written file)
RULES = {"version": 1, "files": [{"path": F, "unlisted_test_mode": "mandatory_success", "entries": [
    {"match": "TestFoo::test_old_name", "mode": "xfail",
     "reason": {"category": "unsupported_op", "text": "sum of ones is off by one on spyre"}}]}]}


def test_translate_maps_instantiated_variants_between_names():
    assert translate("test/test_a.py::TestFooPRIVATEUSE1::test_new_privateuse1_float32",
                     "test/test_a.py::TestFoo::test_new", "test/test_b.py::TestBar::test_old") == \
        "test/test_b.py::TestBarPRIVATEUSE1::test_old_privateuse1_float32"


def test_a_renamed_test_keeps_its_rule_and_history_and_the_explanation_says_so(tmp_path):
    builder = two_refs(tmp_path / "up", {F: BEFORE}, {F: AFTER})
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    (rules_dir / "foo.yaml").write_text(yaml.safe_dump(RULES, sort_keys=False))
    old_variant = f"{F}::TestFooPRIVATEUSE1::test_old_name_privateuse1"
    history = History.from_records([{"id": old_variant, "outcome": "failed", "duration": 2.5}])
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    try:
        ctx = SelectContext(source=source, from_ref="2.13", to_ref="2.14", rules=load_rules([rules_dir]),
                            history=history, torch_version="2.14")
        DiffStage().run(ctx)
        RulesStage().run(ctx)
    finally:
        source.close()
    new_id = f"{F}::TestFoo::test_new_name"
    decision = ctx.decisions[new_id]
    assert decision.selected and f"renamed from {F}::TestFoo::test_old_name" in decision.reason
    assert "Kept as a known xfail" in decision.reason and f"rule for {F}::TestFoo::test_old_name" in decision.reason
    assert decision.rule.endswith("foo.yaml:6")
    # the variant level (stage 4 asks per instantiated id) finds the old rule too
    variant = ctx.rules.decide(f"{F}::TestFooPRIVATEUSE1::test_new_name_privateuse1", torch_version="2.14")
    assert (variant.mode, variant.entry.endswith("foo.yaml:6")) == ("xfail", True)
    assert ctx.rules.decide(f"{F}::TestFooPRIVATEUSE1::test_stays_privateuse1").entry is None  # no rule, none made up
    linked = ctx.history.estimate_seconds(f"{F}::TestFooPRIVATEUSE1::test_new_name_privateuse1")
    assert linked == (2.5, True) and ctx.history.failure_rate(new_id) == 1.0
