"""Stage 1 file handling: classification, binary files, symlinks, syntax errors at one ref."""
from __future__ import annotations

import pytest

from selector.changes import analyse, classify
from selector.upstream import open_upstream
from tests.selector.selector_git_helpers import RepoBuilder, changes_of, device_test_file, run_stage1

TESTS = device_test_file('''
class TestFoo(TestCase):
    def test_a(self, device):
        pass

    def test_b(self, device):
        pass
''')


@pytest.mark.parametrize("path, kind", [
    ("test/test_ops.py", "test_file"),
    ("test/nn/test_pooling.py", "test_file"),
    ("test/common_demo.py", "test_helper"),
    ("torch/testing/_internal/common_device_type.py", "test_helper"),
    ("torch/testing/_internal/opinfo/core.py", "test_helper"),
    ("torch/testing/_internal/common_methods_invocations.py", "opinfo"),
    ("torch/testing/_internal/opinfo/definitions/linalg.py", "opinfo"),
    ("aten/src/ATen/native/native_functions.yaml", "native_functions"),
    ("tools/autograd/derivatives.yaml", "derivatives"),
    ("torch/nn/functional.py", "op_source"),
    ("torch/_refs/nn/functional/__init__.py", "op_source"),
    ("torch/_decomp/decompositions.py", "op_source"),
    ("torch/nn/modules/linear.py", "torch_python"),
    ("torch/_C/__init__.pyi", "torch_python"),
    ("aten/src/ATen/native/BinaryOps.cpp", "cpp_source"),
    ("c10/core/TensorImpl.h", "cpp_source"),
    ("torch/csrc/autograd/engine.cpp", "cpp_source"),
    (".github/workflows/pull.yml", "build_ci"),
    ("CMakeLists.txt", "build_ci"),
    ("tools/build_variables.bzl", "build_ci"),
    ("docs/source/notes/cuda.rst", "docs"),
    ("README.md", "docs"),
    ("third_party/README", "other"),
])
def test_classification(path, kind):
    assert classify(path) == kind


def test_binary_files_are_flagged_and_skipped(tmp_path):
    report = run_stage1(tmp_path, {"docs/logo.png": b"\x89PNG\x00\x00", "test/test_data.py": b"\x00\x01bin"},
                        {"docs/logo.png": b"\x89PNG\x00\x01", "test/test_data.py": b"\x00\x02bin"})
    assert {f.path: (f.kind, f.binary) for f in report.files} == {
        "docs/logo.png": ("docs", True), "test/test_data.py": ("test_file", True)}
    assert report.candidates == [] and report.errors == []


def test_symlinked_test_file_reads_its_target(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/test_real.py": TESTS})
    builder.commit("one", tag="v2.13.0")
    builder.symlink("test/test_alias.py", "test_real.py")
    builder.commit("two", tag="v2.14.0")
    report = analyse(open_upstream(str(builder.root), cache_dir=tmp_path / "c"), "2.13", "2.14")
    (alias,) = report.files
    assert (alias.path, alias.symlink, alias.status) == ("test/test_alias.py", True, "added")
    assert changes_of(report) == {"test/test_alias.py::TestFoo::test_a": "added",
                                  "test/test_alias.py::TestFoo::test_b": "added"}


def test_syntax_error_at_the_new_ref_is_reported_not_fatal(tmp_path):
    broken = TESTS.replace("def test_b(self, device):", "def test_b(self, device:")
    report = run_stage1(tmp_path, {"test/test_foo.py": TESTS, "test/test_ok.py": TESTS},
                        {"test/test_foo.py": broken, "test/test_ok.py": TESTS.replace("test_b", "test_c")})
    assert changes_of(report) == {"test/test_ok.py::TestFoo::test_c": "renamed"}
    (error,) = report.errors
    assert error.startswith("test/test_foo.py: syntax error at 2.14: line ")
    assert next(f for f in report.files if f.path == "test/test_foo.py").error.startswith("syntax error at 2.14")
    assert report.inventory_to.files["test/test_foo.py"].error


def test_syntax_error_at_the_old_ref_selects_the_whole_file(tmp_path):
    broken = TESTS.replace("def test_b(self, device):", "def test_b(self, device:")
    report = run_stage1(tmp_path, {"test/test_foo.py": broken}, {"test/test_foo.py": TESTS})
    assert changes_of(report) == {"test/test_foo.py::TestFoo::test_a": "modified",
                                  "test/test_foo.py::TestFoo::test_b": "modified"}
    assert report.candidates[0].reasons[0].detail == "file did not parse at 2.13"


def test_helper_module_with_syntax_error_selects_its_importers(tmp_path):
    user = device_test_file("class TestUse(TestCase):\n    def test_u(self, device):\n        make()\n",
                            extra_imports="from common_x import make")
    report = run_stage1(tmp_path, {"test/common_x.py": "def make():\n    return 1\n", "test/test_use.py": user},
                        {"test/common_x.py": "def make(:\n"})
    assert changes_of(report) == {"test/test_use.py::TestUse::test_u": "helper"}
    assert "every test importing common_x is a candidate" in report.errors[0]


def test_report_json_is_deterministic(tmp_path):
    first = run_stage1(tmp_path / "a", {"test/test_foo.py": TESTS}, {"test/test_foo.py": TESTS + "\n# tail\n"})
    second = run_stage1(tmp_path / "b", {"test/test_foo.py": TESTS}, {"test/test_foo.py": TESTS + "\n# tail\n"})
    one, two = first.to_json(), second.to_json()
    assert one["counts"] == two["counts"] == {"files": {"test_file": 1}, "candidates": {},
                                              "removed": {"tests": 0, "op_variants": 0}, "ignored": {"tests": 0}}
    assert one["files"] == two["files"]
