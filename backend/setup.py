"""Builds spyre_device._C from csrc/ with torch.utils.cpp_extension.

Metadata lives in pyproject.toml; this file only declares the extension.
"""

from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).parent
SOURCES = sorted(str(p.relative_to(HERE)) for p in (HERE / "csrc").glob("*.cpp"))

setup(
    ext_modules=[
        CppExtension(
            name="spyre_device._C",
            sources=SOURCES,
            include_dirs=[str(HERE / "csrc")],
            extra_compile_args=["-O2", "-Wall", "-Wno-unused-parameter"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
