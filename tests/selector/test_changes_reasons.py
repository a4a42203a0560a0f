"""Every reason says what really happened: a YAML entry is no helper, a parametrize value no body edit."""
from __future__ import annotations

from selector.stages.diff import candidate_reason
from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

NATIVE = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
P = "test/test_param.py"
COMMON = "test/common_sizes.py"

PARAM = device_test_file('''
from torch.testing._internal.common_utils import parametrize
from common_sizes import SHARED

SIZES = [1, 2]
OTHER = [5]


class TestParam(TestCase):
    @parametrize("n", [1, 2])
    def test_inline(self, device, n):
        torch.ones(n, device=device)

    @parametrize("n", SIZES)
    def test_module_list(self, device, n):
        torch.ones(n, device=device)

    @parametrize("n", OTHER)
    def test_other_list(self, device, n):
        torch.zeros(n, device=device)

    @parametrize("n", SHARED)
    def test_shared_list(self, device, n):
        torch.zeros(n, device=device)

    def test_unrelated(self, device):
        torch.add(torch.ones(1), 1)
''', tail="instantiate_device_type_tests(TestParam, globals())\n")
SHARED = "SHARED = [3, 4]\nUNUSED = [0]\n"


def _reason(report, test: str):
    candidate = report.candidate(f"{P}::TestParam::{test}")
    return candidate.reasons[0].detail, candidate_reason(candidate)


def test_an_added_parametrize_value_selects_the_whole_test_and_says_why(tmp_path):
    after = PARAM.replace('@parametrize("n", [1, 2])', '@parametrize("n", [1, 2, 3])') \
        .replace("SIZES = [1, 2]", "SIZES = [1, 2, 4]")
    report = run_stage1(tmp_path, {P: PARAM, COMMON: SHARED}, {P: after, COMMON: SHARED.replace("[3, 4]", "[3, 4, 8]")})
    assert changes_of(report) == {f"{P}::TestParam::test_inline": "modified",
                                  f"{P}::TestParam::test_module_list": "helper",
                                  f"{P}::TestParam::test_shared_list": "helper"}
    assert all(c.ops == [] for c in report.candidates)  # every variant: the new ones have no old counterpart
    detail, sentence = _reason(report, "test_inline")
    assert detail == ("its @parametrize('n') values: 3 added; every variant of the test is selected: variants of "
                      "new values have no counterpart at the old ref to compare with")
    assert sentence.startswith("Selected: its @parametrize values changed: test/test_param.py @@")
    detail, _ = _reason(report, "test_module_list")
    assert detail.startswith("its @parametrize('n') values (module-level SIZES): 4 added; every variant")
    detail, sentence = _reason(report, "test_shared_list")
    assert detail.startswith("its @parametrize('n') values (module-level common_sizes.SHARED): 8 added; every variant")
    assert report.candidate(f"{P}::TestParam::test_shared_list").reasons[0].file == COMMON


def test_a_removed_or_edited_value_selects_only_the_tests_reading_the_list(tmp_path):
    after = PARAM.replace('@parametrize("n", [1, 2])', '@parametrize("n", [1])') \
        .replace("SIZES = [1, 2]", "SIZES = [1, 3]")
    report = run_stage1(tmp_path, {P: PARAM, COMMON: SHARED}, {P: after, COMMON: SHARED.replace("[0]", "[9]")})
    assert changes_of(report) == {f"{P}::TestParam::test_inline": "modified",
                                  f"{P}::TestParam::test_module_list": "helper"}  # not test_other_list nor shared
    assert _reason(report, "test_inline")[0] == ("its @parametrize('n') values: 2 removed; the test is selected, "
                                                 "no other test reads the list")
    assert _reason(report, "test_module_list")[0].startswith(
        "its @parametrize('n') values (module-level SIZES): 3 added; 2 removed; every variant")


def test_a_body_change_with_a_parametrize_change_says_the_body_changed(tmp_path):
    after = PARAM.replace('@parametrize("n", [1, 2])\n    def test_inline(self, device, n):\n        torch.ones(n',
                          '@parametrize("n", [1, 2, 3])\n    def test_inline(self, device, n):\n        torch.zeros(n')
    report = run_stage1(tmp_path, {P: PARAM, COMMON: SHARED}, {P: after, COMMON: SHARED})
    assert changes_of(report) == {f"{P}::TestParam::test_inline": "modified"}
    assert _reason(report, "test_inline") [0] == "test body or decorators changed"


OPS_TEST = device_test_file('''
class TestAdd(TestCase):
    def test_add(self, device):
        torch.add(torch.ones(1), 1)
''', tail="instantiate_device_type_tests(TestAdd, globals())\n")
NATIVE_BEFORE = ("- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  variants: function\n"
                 "  dispatch:\n    CPU: add_cpu\n")
DERIVATIVES_BEFORE = "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha) -> Tensor\n  self: grad\n"


def test_yaml_reasons_name_the_file_entry_and_op_not_a_helper(tmp_path):
    report = run_stage1(tmp_path, {NATIVE: NATIVE_BEFORE, "test/test_add.py": OPS_TEST},
                        {NATIVE: NATIVE_BEFORE.replace("add_cpu", "add_cpu_v2")})
    candidate = report.candidate("test/test_add.py::TestAdd::test_add")
    assert candidate_reason(candidate) == (
        "Selected: the native_functions.yaml entry for `add` changed: aten/src/ATen/native/native_functions.yaml "
        "@@ -4,1 +4,1 @@ (native_functions.yaml entry add.Tensor modified (op add); the test names add).")
    report = run_stage1(tmp_path / "d", {DERIVATIVES: DERIVATIVES_BEFORE, "test/test_add.py": OPS_TEST},
                        {DERIVATIVES: DERIVATIVES_BEFORE.replace("self: grad", "self: grad * 1")})
    sentence = candidate_reason(report.candidate("test/test_add.py::TestAdd::test_add"))
    assert sentence.startswith("Selected: the derivatives.yaml entry for `add` changed: tools/autograd/derivatives.yaml")


def test_every_kind_of_reason_gets_words_that_fit_it():
    from selector.model import Candidate, Evidence
    from selector.stages.diff import change_words

    cases = [  # (change, evidence, the words the sentence starts with)
        ("helper", Evidence(file="test/data.json", detail="reads changed test/data.json by its path"),
            "a data file it reads by its path changed"),
        ("helper", Evidence(file="test/common.py", detail="conservative: test/t.py does `from common import *` ..."),
            "a module it may reach in ways static analysis cannot follow changed (selected conservatively)"),
        ("helper", Evidence(file="test/t.py", detail="setUp of TestX changed: it runs before every test of the class, "
                                                      "device skips such as @onlyCPU included"),
            "a setUp-like method of its class changed"),
        ("helper", Evidence(file="test/t.py", detail="reads limit, a changed attribute of base class Base"),
            "a class attribute it reads changed"),
        ("helper", Evidence(file="c.py", detail="calls common_utils.TestCase.assertEqual (changed) through its base class"),
            "a base-class method it calls changed"),
        ("helper", Evidence(file="c.py", detail="base class common.Base changed (its header or a method every test runs)"),
            "its base class changed"),
        ("helper", Evidence(file="c.py", detail="base class common.Base: setUp changed, which run with every test"),
            "a setUp-like method of its base class changed"),
        ("helper", Evidence(file="c.py", detail="base class common.Base: its decorators, bases or class-level "
                                                "statements changed, which every test inherits"),
            "its base class's decorators, bases or class attributes changed"),
        ("helper", Evidence(file="test/t.py", detail="uses changed helper _check; _base changed (through _check)"),
            "a helper it calls changed"),
        ("helper", Evidence(file="test/t.py", detail="reads module-level LIMIT, which changed"),
            "module-level data it reads changed"),
        ("modified", Evidence(file="test/t.py", detail="class decorators, bases or attributes of TestX changed"),
            "its class's decorators, bases or attributes changed"),
        ("modified", Evidence(file="test/t.py", detail="op mul added to its @ops list"),
            "an op was added to its @ops list"),
        ("modified", Evidence(file="test/t.py", detail="file did not parse at v2.13.0"),
            "its file did not parse at the from-ref"),
        ("source", Evidence(file="torch/_decomp/decompositions.py", detail="decomposition `_softmax` of _softmax changed"),
            "the Python implementation, reference or decomposition of an op it tests changed"),
        ("source", Evidence(file="torch/nn/functional.py", rule="rules/r.yaml:3", detail="relevance rule: torch/nn/**"),
            "a source file it is relevant to changed (testdefs relevance rule)"),
        ("opinfo", Evidence(file="torch/testing/_internal/common_methods_invocations.py",
                            detail="OpInfo file does not parse"),
            "an OpInfo file does not parse at one ref (every @ops test is selected)"),
        ("helper", Evidence(file=NATIVE, detail=f"reads changed {NATIVE} by its path", op="add"),
            "a data file it reads by its path changed"),
    ]
    for change, evidence, words in cases:
        assert change_words(change, evidence) == words, evidence.detail
        sentence = candidate_reason(Candidate(test_id="test/t.py::T::test_x", file="test/t.py", name="test_x",
                                              change=change, reasons=[evidence]))
        assert sentence.startswith(f"Selected: {words}")
