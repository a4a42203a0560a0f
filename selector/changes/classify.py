"""Which kind of upstream file a path is; the kind decides how stage 1 reads its diff."""
from __future__ import annotations

import fnmatch
import functools
import posixpath

from selector.changes.op_sources import is_op_source
from selector.inventory.scan import is_test_file

KINDS = ("test_file", "test_helper", "opinfo", "native_functions", "derivatives", "op_source", "torch_python",
         "cpp_source", "build_ci", "docs", "other")

OPINFO_PATTERNS = ("torch/testing/_internal/common_methods_invocations.py",
                   "torch/testing/_internal/opinfo/definitions/*.py")
CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh", ".mm", ".metal")
BUILD_PATTERNS = (".github/*", ".ci/*", ".circleci/*", "scripts/*", "cmake/*", "*CMakeLists.txt", "*.cmake",
                  "setup.py", "pyproject.toml", "requirements*.txt", "Makefile", "Dockerfile", "*.bzl",
                  "BUILD.bazel", "WORKSPACE", "tools/*", ".ci*", "*.sh")
DOC_PATTERNS = ("docs/*", "*.md", "*.rst", "LICENSE", "NOTICE", "CITATION*")


@functools.lru_cache(maxsize=65536)  # stage 1 asks for every path of a tree, several times
def classify(path: str) -> str:
    name = posixpath.basename(path)
    if name == "native_functions.yaml":
        return "native_functions"
    if name == "derivatives.yaml":
        return "derivatives"
    if any(fnmatch.fnmatchcase(path, p) for p in OPINFO_PATTERNS):
        return "opinfo"
    if is_test_file(path):
        return "test_file"
    if path.endswith(".py") and (path.startswith("test/") or path.startswith("torch/testing/")):
        return "test_helper"
    if any(fnmatch.fnmatchcase(path, p) for p in DOC_PATTERNS):
        return "docs"
    if any(fnmatch.fnmatchcase(path, p) for p in BUILD_PATTERNS):
        return "build_ci"
    if is_op_source(path):  # references, decompositions, torch.functional / nn.functional
        return "op_source"
    if path.startswith("torch/") and path.endswith((".py", ".pyi")):
        return "torch_python"
    if path.endswith(CPP_SUFFIXES):
        return "cpp_source"
    return "other"
