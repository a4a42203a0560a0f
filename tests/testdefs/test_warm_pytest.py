"""Which torch modules a warm parent imports once for several test files (``shared_imports``)."""
from __future__ import annotations

from testdefs.warm_pytest import shared_imports

PREAMBLE = '''"""Tests of the thing.

import torch.not_an_import  (inside the docstring)
"""
# Owner(s): ["module: fx"]
import sys
import torch._dynamo
from torch.utils import (
    bundled_inputs,
)
from torch.testing._internal.common_utils import run_tests
'''


def test_only_a_files_import_preamble_counts_and_only_what_several_files_share():
    late = PREAMBLE + "torch.set_default_dtype(torch.float64)\nimport torch.onnx\n"
    guarded = "import torch\ntry:\n    import torch._dynamo\nexcept ImportError:\n    pass\n"
    assert shared_imports([PREAMBLE, late, "import torch.onnx\n", guarded]) == [
        ["torch._dynamo", "torch.utils"],  # common_utils is preloaded for every file anyway
        ["torch._dynamo", "torch.utils"],  # torch.onnx comes after a statement that changes state
        [],  # the only file importing torch.onnx before any other statement
        [],  # an indented import is not in the preamble
    ]
    assert shared_imports([PREAMBLE, PREAMBLE], at_least=3) == [[], []]
