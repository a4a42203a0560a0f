"""Stage 1 propagation: helpers, class decorators, setUp, instantiate arguments, helper modules."""
from __future__ import annotations

from selector.changes.functions import BEFORE_SKIPS
from tests.selector.selector_git_helpers import changes_of, device_test_file, run_stage1

F = "test/test_foo.py"
G = "test/test_other.py"
HELPERS = "test/common_things.py"

BEFORE = device_test_file('''
def _base(x):
    return x + 1


def _reference(x):
    return _base(x)


class TestFoo(TestCase):
    def _check(self, value):
        self.assertEqual(value, value)

    def test_uses_reference(self, device):
        self.assertEqual(_reference(1), 2)

    def test_uses_check(self, device):
        self._check(3)

    def test_independent(self, device):
        pass


class TestBar(TestCase):
    limit = 3

    def setUp(self):
        super().setUp()

    def test_one(self, device):
        pass

    def test_two(self, device):
        pass
''', extra_imports="from common_things import shared", tail=(
    "instantiate_device_type_tests(TestFoo, globals())\n"
    "instantiate_device_type_tests(TestBar, globals(), except_for=('cuda',))\n"))

OTHER = device_test_file('''
import common_things


class TestOther(TestCase):
    def test_calls_shared(self, device):
        shared()

    def test_calls_module_attr(self, device):
        common_things.wrapper()

    def test_alone(self, device):
        pass
''', extra_imports="from common_things import shared")

HELPER_MODULE = "def shared():\n    return 1\n\n\ndef wrapper():\n    return shared()\n\n\ndef unused():\n    return 0\n"


def test_module_helper_change_reaches_tests_through_helpers(tmp_path):
    after = BEFORE.replace("return x + 1", "return x + 2")
    report = run_stage1(tmp_path, {F: BEFORE}, {F: after})
    assert changes_of(report) == {f"{F}::TestFoo::test_uses_reference": "helper"}
    (evidence,) = report.candidates[0].reasons
    assert evidence.detail == "uses changed helper _reference; _base changed (through _reference)"
    assert evidence.line == BEFORE.splitlines().index("def _base(x):") + 1  # the hunk that caused it


def test_class_helper_and_setup_changes(tmp_path):
    after = BEFORE.replace("self.assertEqual(value, value)", "self.assertIs(value, value)") \
        .replace("super().setUp()", "super().setUp()\n        self.extra = True")
    report = run_stage1(tmp_path, {F: BEFORE}, {F: after})
    assert changes_of(report) == {f"{F}::TestFoo::test_uses_check": "helper",
                                  f"{F}::TestBar::test_one": "helper", f"{F}::TestBar::test_two": "helper"}


def test_class_decorator_attribute_and_instantiate_changes_reach_every_test(tmp_path):
    decorated = BEFORE.replace("class TestBar(TestCase):", "@unittest.skipIf(False, 'never')\nclass TestBar(TestCase):")
    report = run_stage1(tmp_path, {F: BEFORE}, {F: decorated})
    assert changes_of(report) == {f"{F}::TestBar::test_one": "modified", f"{F}::TestBar::test_two": "modified"}
    assert report.candidates[0].reasons[0].detail == "class decorators, bases or attributes of TestBar changed"

    report = run_stage1(tmp_path / "attr", {F: BEFORE}, {F: BEFORE.replace("limit = 3", "limit = 4")})
    assert set(changes_of(report)) == {f"{F}::TestBar::test_one", f"{F}::TestBar::test_two"}

    narrowed = BEFORE.replace("except_for=('cuda',)", "except_for=('cuda', 'privateuse1')")
    report = run_stage1(tmp_path / "inst", {F: BEFORE}, {F: narrowed})
    assert set(changes_of(report)) == {f"{F}::TestBar::test_one", f"{F}::TestBar::test_two"}
    assert report.candidates[0].reasons[0].detail == "instantiate_device_type_tests arguments of TestBar changed"


def test_helper_module_change_reaches_importing_tests_in_other_files(tmp_path):
    before = {F: BEFORE, G: OTHER, HELPERS: HELPER_MODULE}
    report = run_stage1(tmp_path, before, {HELPERS: HELPER_MODULE.replace("return 1", "return 2")})
    assert changes_of(report) == {f"{G}::TestOther::test_calls_shared": "helper",
                                  f"{G}::TestOther::test_calls_module_attr": "helper"}
    (helper_file,) = report.files
    assert (helper_file.kind, helper_file.details) == ("test_helper", ["changed: shared, wrapper"])
    evidence = report.candidate(f"{G}::TestOther::test_calls_shared").reasons[0]
    assert evidence.file == HELPERS and evidence.hunk == "@@ -2,1 +2,1 @@"


def test_unused_helper_change_selects_nothing(tmp_path):
    before = {F: BEFORE, G: OTHER, HELPERS: HELPER_MODULE}
    report = run_stage1(tmp_path, before, {HELPERS: HELPER_MODULE.replace("return 0", "return -1")})
    assert report.candidates == []


SHARED_UTILS = "torch/testing/_internal/common_utils.py"
SHARED_BASE = '''
import unittest


class TestCase(unittest.TestCase):
    precision = 1e-5

    def setUp(self):
        self.seed = 0

    def assertClose(self, a, b):
        return self._compare(a, b)

    def _compare(self, a, b):
        return abs(a - b) <= self.precision

    def assertSameShape(self, a, b):
        return a == b
'''
USERS = '''
from torch.testing._internal.common_utils import TestCase


class LocalBase(TestCase):
    def check(self, a):
        return self.assertSameShape(a, a)


class TestUsers(LocalBase):
    def test_close(self):
        self.assertClose(1, 1)

    def test_shape_through_local_base(self):
        self.check(2)

    def test_plain(self):
        self.assertTrue(True)
'''


def test_a_change_inside_a_shared_base_class_selects_only_tests_that_reach_it(tmp_path):
    before = {SHARED_UTILS: SHARED_BASE, G: USERS}
    report = run_stage1(tmp_path, before, {SHARED_UTILS: SHARED_BASE.replace("<= self.precision", "< self.precision")})
    assert changes_of(report) == {f"{G}::TestUsers::test_close": "helper"}  # via assertClose -> _compare
    (evidence,) = report.candidate(f"{G}::TestUsers::test_close").reasons
    assert evidence.file == SHARED_UTILS and "assertClose" in evidence.detail and evidence.hunk.startswith("@@ -15,")


def test_a_shared_base_class_setup_or_attribute_change_selects_every_subclass_test(tmp_path):
    for index, changed in enumerate((SHARED_BASE.replace("self.seed = 0", "self.seed = 1"),
                                     SHARED_BASE.replace("precision = 1e-5", "precision = 1e-3"))):
        report = run_stage1(tmp_path / str(index), {SHARED_UTILS: SHARED_BASE, G: USERS}, {SHARED_UTILS: changed})
        assert set(changes_of(report)) == {f"{G}::TestUsers::{name}" for name in
                                           ("test_close", "test_shape_through_local_base", "test_plain")}


def test_a_whole_base_class_change_cites_what_changed_not_the_class_first_hunk(tmp_path):
    """As in torch 2.13.0 -> 2.14.1's common_utils.TestCase: a method changed above what makes the
    class change whole; the reason names that (tearDown, or a class attribute) and points at its hunk."""
    base = SHARED_BASE.replace("    def assertSameShape", "    tolerance = 1\n\n    def assertSameShape") + \
        "\n    def tearDown(self):\n        self.seed = None\n"
    method_above = base.replace("self._compare(a, b)", "self._compare(b, a)")  # the class's first hunk
    cases = {
        "teardown": (method_above.replace("self.seed = None", "self.seed = -1"),
                     "tearDown changed, which run with every test", "self.seed = -1"),
        "attribute": (method_above.replace("tolerance = 1", "tolerance = 2"),
                      "its decorators, bases or class-level statements changed", "tolerance = 2"),
    }
    for name, (changed, words, line) in cases.items():
        report = run_stage1(tmp_path / name, {SHARED_UTILS: base, G: USERS}, {SHARED_UTILS: changed})
        assert len(report.candidates) == 3
        (evidence,) = report.candidate(f"{G}::TestUsers::test_plain").reasons
        assert evidence.detail == f"base class torch.testing._internal.common_utils.TestCase: {words}" + (
            ", which every test inherits" if name == "attribute" else "")
        start = int(evidence.hunk.split("+")[1].split(",")[0].split(" ")[0])
        assert changed.splitlines()[start - 1].strip() == line  # the hunk that made the class change whole


CONSTANTS = '''
import torch
from torch.testing._internal.common_utils import TestCase, parametrize
from torch.testing._internal.common_device_type import dtypes

FLOAT_TYPES = (torch.float32, torch.float64)
SIZES = [1, 2]
LIMIT = 3


def _wrapper(x):
    return x < LIMIT


class TestData(TestCase):
    @dtypes(*FLOAT_TYPES)
    def test_dtype_list(self, device, dtype):
        pass

    @parametrize("size", SIZES)
    def test_parametrized(self, size):
        pass

    def test_through_wrapper(self):
        self.assertTrue(_wrapper(1))

    def test_unrelated(self):
        pass
'''


def test_module_level_data_reaches_the_tests_that_read_it(tmp_path):
    cases = {"FLOAT_TYPES = (torch.float32, torch.float64)": ("FLOAT_TYPES = (torch.float32,)", "test_dtype_list"),
             "SIZES = [1, 2]": ("SIZES = [1, 2, 3]", "test_parametrized"),
             "LIMIT = 3": ("LIMIT = 4", "test_through_wrapper")}
    for index, (old, (new, test)) in enumerate(cases.items()):
        report = run_stage1(tmp_path / str(index), {F: CONSTANTS}, {F: CONSTANTS.replace(old, new)})
        assert changes_of(report) == {f"{F}::TestData::{test}": "helper"}, old
        (evidence,) = report.candidate(f"{F}::TestData::{test}").reasons
        assert evidence.line == CONSTANTS.splitlines().index(old) + 1  # the changed data, not the wrapper
        assert evidence.hunk == f"@@ -{evidence.line},1 +{evidence.line},1 @@"


def test_a_shared_module_constant_reaches_importing_tests_only(tmp_path):
    shared = "torch/testing/_internal/common_dtype.py"
    users = ("from torch.testing._internal.common_dtype import FLOATS\n\n\n"
             "def test_reads():\n    assert FLOATS\n\n\ndef test_other():\n    pass\n")
    report = run_stage1(tmp_path, {shared: "FLOATS = ('float32',)\n", G: users}, {shared: "FLOATS = ('float16',)\n"})
    assert changes_of(report) == {f"{G}::test_reads": "helper"}


def test_a_method_removed_from_a_shared_base_class_reaches_its_callers(tmp_path):
    after = SHARED_BASE.replace("    def assertSameShape(self, a, b):\n        return a == b\n", "")
    report = run_stage1(tmp_path, {SHARED_UTILS: SHARED_BASE, G: USERS}, {SHARED_UTILS: after})
    assert changes_of(report) == {f"{G}::TestUsers::test_shape_through_local_base": "helper"}
    (evidence,) = report.candidate(f"{G}::TestUsers::test_shape_through_local_base").reasons
    assert evidence.line == 5 and "assertSameShape" in evidence.detail  # the class: the method is gone


CLASS_DATA = '''
import torch
from torch.testing._internal.common_utils import TestCase
from torch.testing._internal.common_dtype import SHARED_FLOATS

LOCAL_FLOATS = (torch.float32, torch.float64)


class TestLocal(TestCase):
    dtypes_to_test = LOCAL_FLOATS

    def test_a(self):
        pass


class TestShared(TestCase):
    dtypes_to_test = SHARED_FLOATS

    def test_b(self):
        pass


class TestNeither(TestCase):
    def test_c(self):
        pass
'''


def test_a_class_attribute_reading_changed_module_data_selects_its_tests(tmp_path):
    shared = "torch/testing/_internal/common_dtype.py"
    before = {F: CLASS_DATA, shared: "SHARED_FLOATS = ('float32',)\n"}
    report = run_stage1(tmp_path, before, {F: CLASS_DATA.replace("torch.float32, torch.float64", "torch.float32,")})
    assert changes_of(report) == {f"{F}::TestLocal::test_a": "helper"}
    (evidence,) = report.candidate(f"{F}::TestLocal::test_a").reasons
    line = CLASS_DATA.splitlines().index("LOCAL_FLOATS = (torch.float32, torch.float64)") + 1
    assert (evidence.line, evidence.detail) == (line, "class TestLocal reads changed LOCAL_FLOATS in its attributes "
                                                      "or decorators")
    report = run_stage1(tmp_path / "shared", before, {shared: "SHARED_FLOATS = ('float16',)\n"})
    assert changes_of(report) == {f"{F}::TestShared::test_b": "helper"}


LOCAL_BASE = device_test_file('''
class DeviceBase(TestCase):
    compute_dtype = None
    shape = (2, 2)

    def setUp(self):
        super().setUp()
        self.scratch = 0


class TestChild(DeviceBase):
    def test_reads_dtype(self, device):
        self.assertIsNone(self.compute_dtype)

    def test_reads_nothing(self, device):
        pass
''', tail="instantiate_device_type_tests(TestChild, globals())\n")


def test_a_base_class_in_the_same_file_reaches_its_subclass_tests(tmp_path):
    # setUp runs before every test of the subclass
    report = run_stage1(tmp_path / "setup", {F: LOCAL_BASE}, {F: LOCAL_BASE.replace("scratch = 0", "scratch = 1")})
    assert changes_of(report) == {f"{F}::TestChild::test_reads_dtype": "helper",
                                  f"{F}::TestChild::test_reads_nothing": "helper"}
    assert {c.reasons[0].detail for c in report.candidates} == {f"setUp of base class DeviceBase changed: {BEFORE_SKIPS}"}
    # a changed class attribute reaches the tests that read it
    report = run_stage1(tmp_path / "attr", {F: LOCAL_BASE},
                        {F: LOCAL_BASE.replace("compute_dtype = None", "compute_dtype = torch.float64")})
    assert changes_of(report) == {f"{F}::TestChild::test_reads_dtype": "helper"}
    (evidence,) = report.candidates[0].reasons
    assert evidence.detail == "reads compute_dtype, a changed attribute of base class DeviceBase"
    assert evidence.line == LOCAL_BASE.splitlines().index("class DeviceBase(TestCase):") + 1
    # anything else in the base's header (a decorator, a base) reaches every test
    report = run_stage1(tmp_path / "bases", {F: LOCAL_BASE},
                        {F: LOCAL_BASE.replace("class DeviceBase(TestCase):", "class DeviceBase(TestCase, object):")})
    assert set(changes_of(report)) == {f"{F}::TestChild::test_reads_dtype", f"{F}::TestChild::test_reads_nothing"}


KEYED = device_test_file('''
from torch.testing._internal.common_utils import parametrize

OPS = ["add", "sum"]
KWARGS = {"add": {"alpha": 2}}


class TestKeyed(TestCase):
    @parametrize("op_name", OPS)
    def test_kernel(self, device, op_name):
        getattr(torch, op_name)(torch.ones(2), **KWARGS.get(op_name, {}))

    def test_other(self, device):
        pass
''', tail="instantiate_device_type_tests(TestKeyed, globals())\n")


def test_a_changed_entry_of_a_module_level_dict_names_its_key(tmp_path):
    after = KEYED.replace('KWARGS = {"add": {"alpha": 2}}', 'KWARGS = {"add": {"alpha": 2}, "sum": {"dtype": torch.float64}}')
    report = run_stage1(tmp_path, {F: KEYED}, {F: after})
    assert changes_of(report) == {f"{F}::TestKeyed::test_kernel": "helper"}
    candidate = report.candidate(f"{F}::TestKeyed::test_kernel")
    assert [(e.op, e.detail) for e in candidate.reasons] == [
        ("sum", "reads module-level KWARGS, which changed (entry 'sum')")]
    assert candidate.ops == []  # every variant stays selected; stage 4 runs the sum variant first


LOCAL_HELPER_CLASSES = device_test_file('''
class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Mixin:
    def setUp(self):
        super().setUp()
        self.scale = 1

    def check(self, x):
        return x * 2


class TestOps(Mixin, TestCase):
    def test_builds_model(self, device):
        Model()(torch.ones(2, device=device))

    def test_calls_inherited_check(self, device):
        self.check(torch.ones(2, device=device))

    def test_plain(self, device):
        pass
''', tail="instantiate_device_type_tests(TestOps, globals())\n")


def test_a_test_files_own_classes_without_tests_reach_the_tests_using_them(tmp_path):
    def run(name, old, new):
        report = run_stage1(tmp_path / name, {F: LOCAL_HELPER_CLASSES}, {F: LOCAL_HELPER_CLASSES.replace(old, new)})
        return {c.test_id.rsplit("::", 1)[1]: c.reasons[0].detail for c in report.candidates}
    # an nn.Module defined in the test file: the tests that build it
    assert run("model", "x + 1", "x + 2") == {"test_builds_model": "uses changed helper Model; Model changed"}
    # a mixin's method: the tests that call it, though the scan knows it only as an inherited name
    assert run("check", "x * 2", "x * 3") == {
        "test_calls_inherited_check": "uses changed helper self.check; self.check changed"}
    # a mixin's setUp runs before every test of the class; the reason names the class defining it
    assert run("setup", "self.scale = 1", "self.scale = 2") == dict.fromkeys(
        ("test_builds_model", "test_calls_inherited_check", "test_plain"),
        f"setUp of base class Mixin changed: {BEFORE_SKIPS}")


def test_a_method_named_like_a_changed_module_function_is_named_once(tmp_path):
    # upstream's test_nestedtensor.py: a module function random_nt and a test calling self.random_nt
    source = device_test_file('''
def check(x):
    return x + 1


class TestOps(TestCase):
    def check(self, x):
        return check(x)

    def test_calls(self, device):
        self.check(torch.ones(2, device=device))
''', tail="instantiate_device_type_tests(TestOps, globals())\n")
    report = run_stage1(tmp_path, {F: source}, {F: source.replace("x + 1", "x + 2")})
    assert [r.detail for r in report.candidate(f"{F}::TestOps::test_calls").reasons] == [
        "uses changed helper self.check; check changed (through self.check)"]
