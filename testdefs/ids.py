"""Test ids: the upstream pytest node id and its normalised form.

Upstream ids look like ``test/test_ops.py::TestCommonPRIVATEUSE1::test_add_spyre_float32``.
Rules and history match on the normalised form ``test/test_ops.py::TestCommon::test_add``:
the device class suffix (PRIVATEUSE1 or SPYRE, the drift torch-spyre suffers from) and the
device and dtype suffixes of the method are stripped, and kept alongside.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DEVICE_CLASS_SUFFIXES = ("PRIVATEUSE1", "SPYRE", "CPU", "CUDA", "META", "XPU", "MPS")
DEVICE_NAMES = ("spyre", "privateuse1", "cpu", "cuda", "meta", "xpu", "mps")
# Our device's variants always carry one of these; another device word at the very end with no
# dtype after it is part of the generic name (upstream has test_compare_cpu, test_to_cuda, ...).
OWN_DEVICE_NAMES = ("spyre", "privateuse1")
DTYPE_NAMES = (
    "float64", "float32", "float16", "bfloat16", "complex128", "complex64", "complex32",
    "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool",
    "float8_e4m3fn", "float8_e5m2",
)
_METHOD = re.compile(
    rf"^(?P<base>.+?)(?:_(?P<device>{'|'.join(DEVICE_NAMES)}))(?:_(?P<dtypes>(?:(?:{'|'.join(DTYPE_NAMES)})_?)+))?$"
)

_DEVICE_WORD = re.compile(rf"_(?:{'|'.join(DEVICE_NAMES)})(?:_|$)")


@dataclass(frozen=True)
class TestId:
    """A parsed upstream test id."""

    __test__ = False  # not a pytest class

    file: str
    class_name: str | None  # as instantiated, e.g. TestCommonPRIVATEUSE1
    method: str  # as instantiated, e.g. test_add_spyre_float32
    class_base: str | None  # e.g. TestCommon
    method_base: str  # e.g. test_add
    device: str | None  # e.g. spyre
    dtypes: tuple[str, ...]  # e.g. ("float32",)

    @property
    def raw(self) -> str:
        return "::".join(p for p in (self.file, self.class_name, self.method) if p)

    @property
    def normalised(self) -> str:
        return "::".join(p for p in (self.file, self.class_base, self.method_base) if p)

    @property
    def dtype(self) -> str | None:
        return self.dtypes[0] if self.dtypes else None


def strip_class_suffix(class_name: str) -> str:
    """``TestFooPRIVATEUSE1`` -> ``TestFoo``. A class whose own name ends in a device word and that is
    instantiated for our device again (torch-spyre wraps ``TestAutocastCPU`` into
    ``TestAutocastCPUPRIVATEUSE1``) loses both, so it meets a rule naming ``TestAutocastCPU``."""
    stripped = _strip_one(class_name)
    if stripped != class_name and class_name.endswith(("PRIVATEUSE1", "SPYRE")):
        stripped = _strip_one(stripped)
    return stripped


def _strip_one(class_name: str) -> str:
    for suffix in DEVICE_CLASS_SUFFIXES:
        if class_name.endswith(suffix) and len(class_name) > len(suffix):
            return class_name[: -len(suffix)]
    return class_name


def split_method(method: str) -> tuple[str, str | None, tuple[str, ...]]:
    """``test_add_spyre_float32`` -> (``test_add``, ``spyre``, (``float32``,)); plain names pass through,
    and so does a generic name ending in another device's word (``test_compare_cpu``)."""
    params = ""
    if "[" in method:  # pytest parametrization suffix stays with the base name
        method, params = method.split("[", 1)
        params = "[" + params
    if not _DEVICE_WORD.search(method):  # most rule names: no device word at all, no regex backtracking
        return method + params, None, ()
    found = _METHOD.match(method)
    if not found or (found["device"] not in OWN_DEVICE_NAMES and not found["dtypes"]):
        return method + params, None, ()
    dtypes = _rejoin_dtypes(found["dtypes"]) if found["dtypes"] else ()
    return found["base"] + params, found["device"], dtypes


def _rejoin_dtypes(text: str) -> tuple[str, ...]:
    """Split ``float8_e4m3fn_float32`` into known dtype names, longest first."""
    out: list[str] = []
    rest = text
    names = sorted(DTYPE_NAMES, key=len, reverse=True)
    while rest:
        for name in names:
            if rest == name or rest.startswith(name + "_"):
                out.append(name)
                rest = rest[len(name) + 1:]
                break
        else:
            break
    return tuple(out)


def parse(test_id: str) -> TestId:
    """Parse ``file::Class::method`` or ``file::function``."""
    parts = test_id.split("::")
    file = parts[0]
    class_name = parts[1] if len(parts) > 2 else None
    method = parts[-1] if len(parts) > 1 else ""
    base, device, dtypes = split_method(method)
    return TestId(file=file, class_name=class_name, method=method,
                  class_base=strip_class_suffix(class_name) if class_name else None,
                  method_base=base, device=device, dtypes=dtypes)


def normalise(test_id: str) -> str:
    return parse(test_id).normalised
