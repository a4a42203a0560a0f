"""Stage 1: edits that change nothing spyre runs select nothing (docstrings in op sources, other devices' decorators)."""
from __future__ import annotations

import textwrap

from selector.stages.base import SelectContext
from testdefs.loader import load_rules
from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

T = "test/test_nn.py"
FUNCTIONAL = "torch/nn/functional.py"
SOURCE = "def softmax(input, dim=None):\n    return input.softmax(dim)\n"
TESTS = device_test_file('''
class TestNN(TestCase):
    @dtypes(torch.float32)
    def test_softmax(self, device, dtype):
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual(x.softmax(0).sum().item(), 1.0)
''', tail="instantiate_device_type_tests(TestNN, globals())\n")


def _rules(tmp_path):
    path = tmp_path / "rules" / "demo.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent('''\
        version: 1
        relevance:
          rules:
            - sources: ["torch/nn/functional.py"]
              tests: [test/test_nn.py]
        '''))
    return load_rules(path)


def test_a_docstring_or_comment_in_an_op_source_fires_no_relevance_rule_and_feeds_no_agent(tmp_path):
    rules = _rules(tmp_path)
    before = {T: TESTS, FUNCTIONAL: SOURCE}
    documented = SOURCE.replace("None):\n", 'None):\n    """Softmax over ``dim``."""  # no dtype\n')
    report = run_stage1(tmp_path / "doc", before, {FUNCTIONAL: documented}, rules=rules)
    assert changes_of(report) == {}
    assert [f.no_op for f in report.files] == [True]
    ctx = SelectContext(source=None, from_ref="2.13", to_ref="2.14")
    ctx.report = report
    assert ctx.hunks() == []  # the agent reads no hunk of it
    report = run_stage1(tmp_path / "code", before, {FUNCTIONAL: SOURCE.replace("(dim)", "(dim + 0)")}, rules=rules)
    assert set(changes_of(report)) == {f"{T}::TestNN::test_softmax"}
    assert [f.no_op for f in report.files] == [False]


def test_a_decorator_for_other_devices_only_leaves_the_test_unselected(tmp_path):
    cuda = TESTS.replace("    @dtypes(torch.float32)\n",
                         "    @dtypes(torch.float32)\n    @dtypesIfCUDA(torch.float32, torch.float64)\n")
    report = run_stage1(tmp_path / "cuda", {T: TESTS}, {T: cuda})
    assert changes_of(report) == {}
    assert [i.reason for i in report.ignored] == ["only decorators for other devices changed (dtypesIfCUDA, skipCUDAIf, ...)"]
    # the same line for spyre's device type changes what spyre runs; so does a body edit alongside it
    spyre = cuda.replace("dtypesIfCUDA", "dtypesIfPRIVATEUSE1")
    report = run_stage1(tmp_path / "spyre", {T: TESTS}, {T: spyre})
    assert changes_of(report) == {f"{T}::TestNN::test_softmax": "modified"}
    report = run_stage1(tmp_path / "body", {T: TESTS}, {T: cuda.replace("ones(3", "ones(4")})
    assert changes_of(report) == {f"{T}::TestNN::test_softmax": "modified"}
