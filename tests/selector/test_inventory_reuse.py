"""A changed file's second version scanned around the functions it shares with the first.

Every case checks the one promise that matters: the inventory equals a full scan's, in both
directions, whatever was re-used; and that re-use really happened where the text allows it.
"""
from __future__ import annotations

from dataclasses import asdict

import pytest

from selector.inventory import reuse
from selector.inventory.scan import PathMemo, _parse_stripped, scan_file

PATH = "test/test_ops_demo.py"

BASE = '''"""Module docstring."""
import torch
from torch.testing._internal.common_utils import TestCase, run_tests
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops, onlyCPU
from torch.testing._internal.common_methods_invocations import op_db

FLOAT_TYPES = (torch.float32, torch.float64)


def helper(x):
    return x * 2


class TestDemo(TestCase):
    """Class docstring."""
    dtypes = FLOAT_TYPES

    def setUp(self):
        super().setUp()

    def check(self, value):
        self.assertEqual(helper(value), value * 2)

    @onlyCPU
    def test_one(self, device):
        self.check(torch.ones(2, device=device))

    @ops(op_db, allowed_dtypes=(torch.float32,))
    def test_ops(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            op(sample.input)

    def test_two(self, device):
        x = torch.zeros(3, device=device)
        self.assertEqual(x.sum().item(), 0)


class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1


instantiate_device_type_tests(TestDemo, globals(), only_for=("cpu",))

if __name__ == "__main__":
    run_tests()
'''


def scan_both_ways(first: str, second: str) -> list[int]:
    """Scan ``second`` after ``first`` (and the other way round); assert each equals a full scan.
    Returns how many functions each direction re-used."""
    reused = []
    for one, other in ((first, second), (second, first)):
        memo = PathMemo()
        scan_file(PATH, one, memo)
        assert asdict(scan_file(PATH, other, memo)) == asdict(scan_file(PATH, other))
        parsed = reuse.parse_around(reuse.source_lines(other), memo.earlier, _parse_stripped) \
            if memo.earlier is not None else None
        reused.append(len(parsed[1]) if parsed else 0)
    return reused


def test_one_changed_method_reuses_the_others_with_their_new_lines():
    second = BASE.replace("        x = torch.zeros(3, device=device)\n",
                          "        # zeros, then three more lines\n\n\n        x = torch.zeros(4, device=device)\n")
    assert scan_both_ways(BASE, second) == [6, 6]  # all seven functions but test_two
    memo = PathMemo()
    scan_file(PATH, BASE, memo)
    shifted = scan_file(PATH, BASE.replace("class TestDemo", "\n\n\nclass TestDemo"), memo)
    test_one = shifted.class_named("TestDemo").tests[0]
    assert (test_one.name, test_one.lineno) == ("test_one", BASE.splitlines().index("    def test_one(self, device):") + 4)


def test_moved_methods_and_methods_moved_between_classes():
    moved = BASE.replace('''    def test_two(self, device):
        x = torch.zeros(3, device=device)
        self.assertEqual(x.sum().item(), 0)
''', "").replace('''class Model(torch.nn.Module):''', '''class Model(torch.nn.Module):
    def test_two(self, device):
        x = torch.zeros(3, device=device)
        self.assertEqual(x.sum().item(), 0)
''')
    assert scan_both_ways(BASE, moved) == [7, 7]  # test_two re-used, analysed again in Model's context


def test_a_changed_import_or_constant_analyses_reused_functions_again():
    assert scan_both_ways(BASE, BASE.replace("import torch\n", "import torch\nimport numpy as helper_np\n"))[0] == 7
    renamed = BASE.replace("def helper(x):\n    return x * 2\n", "helper = lambda x: x * 2\n")
    memo = PathMemo()
    scan_file(PATH, BASE, memo)
    # `helper` is no longer a module function: check() still re-used, its uses recomputed
    check = scan_file(PATH, renamed, memo).class_named("TestDemo").helpers[1]
    assert (check.name, "helper" in check.uses) == ("check", False)
    scan_both_ways(BASE, renamed)
    scan_both_ways(BASE, BASE.replace('only_for=("cpu",)', 'only_for=("cpu", "spyre")'))
    scan_both_ways(BASE, BASE.replace("FLOAT_TYPES = (torch.float32, torch.float64)", "FLOAT_TYPES = (torch.float32,)"))


@pytest.mark.parametrize("decorator", [
    "    @onlyCPU\n",
    "    @unittest.skipIf(\n        TEST_WITH_TORCHDYNAMO,\n        'slow under dynamo'\n    )\n",
    "    @unittest.skipIf(TEST_WITH_TORCHDYNAMO,\n                     'slow under dynamo')\n",
])
def test_a_decorator_added_above_an_unchanged_function(decorator):
    second = BASE.replace("    def test_two(self, device):\n", decorator + "    def test_two(self, device):\n")
    assert scan_both_ways(BASE, second)[0] == 6  # test_two now carries the decorator: scanned again


def test_a_function_that_grew_at_its_end_or_lost_lines():
    grown = BASE.replace("        super().setUp()\n", "        super().setUp()\n        self.extra = 1\n")
    assert scan_both_ways(BASE, grown) == [6, 6]


def test_an_unchanged_function_inside_a_string_or_a_new_block():
    quoted = BASE.replace("    def setUp(self):\n", '    CODE = """\n    def setUp(self):\n').replace(
        "    def check(self, value):\n", '    """\n\n    def check(self, value):\n')
    scan_both_ways(BASE, quoted)  # the placeholder would sit in the string: parsed whole, same result
    guarded = BASE.replace("def helper(x):\n    return x * 2\n",
                           "if torch.cuda.is_available():\n    def helper(x):\n        return x * 2\n")
    scan_both_ways(BASE, guarded)
    tested = BASE.replace("class Model(torch.nn.Module):", "if True:\n  class Model(torch.nn.Module):")
    scan_both_ways(BASE, tested)  # an indented block after a reused function's text: parsed whole


def test_docstrings_comments_and_line_endings():
    scan_both_ways(BASE, BASE.replace('"""Module docstring."""\n', ""))
    scan_both_ways(BASE, BASE.replace('    """Class docstring."""\n', ""))
    scan_both_ways(BASE, "# a new first line\n" + BASE)
    scan_both_ways(BASE, BASE.replace("\n", "\r\n"))
    first_helper = BASE.replace('"""Module docstring."""\n', "").replace("import torch\n", "", 1)
    scan_both_ways(first_helper, first_helper.replace("from torch", '"""Now a docstring."""\nfrom torch', 1))


def test_a_syntax_error_in_either_version_is_reported_as_a_full_scan_does():
    broken = BASE.replace("        return x + 1\n", "        return x +\n")
    memo = PathMemo()
    scan_file(PATH, BASE, memo)
    assert scan_file(PATH, broken, memo).error == scan_file(PATH, broken).error == "line 40: invalid syntax"
    scan_both_ways(BASE, broken)


def test_module_level_tests_and_duplicate_texts():
    twice = BASE + "\n\ndef test_plain():\n    pass\n\n\ndef test_other():\n    pass\n"
    scan_both_ways(twice, twice.replace("def test_other():\n    pass\n", "def test_other():\n    return None\n"))
    same_body = BASE.replace("    def check(self, value):", "    def setUp2(self):\n        super().setUp()\n\n"
                                                               "    def check(self, value):")
    scan_both_ways(BASE, same_body)
