"""Builds spyre_device._C from csrc/ with torch.utils.cpp_extension.

Metadata lives in pyproject.toml; this file declares the extension and its torch dependency,
which is the minor release of the torch it is compiled against (the binary is ABI-bound to it).
"""

import os
import re
import sys
from pathlib import Path

import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).parent
SOURCES = sorted(str(p.relative_to(HERE)) for p in (HERE / "csrc").glob("*.cpp"))
# Minor releases whose C++ API the sources are written for (docs/backend.md: adding one).
SUPPORTED_TORCH = ((2, 13), (2, 14))

major, minor = (int(part) for part in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
if (major, minor) not in SUPPORTED_TORCH and not os.environ.get("SPYRE_ALLOW_ANY_TORCH"):
    sys.exit(f"spyre-device: torch {torch.__version__} is not a supported torch "
             f"({', '.join(f'{a}.{b}' for a, b in SUPPORTED_TORCH)}); see docs/backend.md "
             "'Supported torch versions' (SPYRE_ALLOW_ANY_TORCH=1 tries anyway)")

setup(
    install_requires=[f"torch=={major}.{minor}.*", "rich>=13"],  # rich: the tables of `relay-cli backend`
    ext_modules=[
        CppExtension(
            name="spyre_device._C",
            sources=SOURCES,
            include_dirs=[str(HERE / "csrc")],
            # -O3 (torch's own default for extensions): the reduced-precision rounding loops are
            # vectorized; at -O2, GCC leaves them scalar, slower than three vectorized torch passes.
            extra_compile_args=["-O3", "-Wall", "-Wno-unused-parameter"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
