"""`import torch` alone makes the spyre device usable; settings are validated."""

import pytest

import spyre_device
from spyre_device import _C
from tests.backend.device_helpers import run_python  # noqa: F401  (fixture: a fresh interpreter)

ISSUE_COMMAND = "import torch; x = torch.arange(6., device='spyre').view(2, 3); print((x * 2).sum().item())"


def test_import_torch_alone_gives_the_device_before_torch_testing(run_python):
    result = run_python(
        ISSUE_COMMAND
        + """
import sys
assert "spyre_device" in sys.modules
assert "torch.testing._internal.common_device_type" not in sys.modules
from torch.testing._internal import common_device_type
print([b.__name__ for b in common_device_type.device_type_test_bases])
"""
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "30.0"
    assert "PrivateUse1TestBase" in lines[1]


def test_autoload_can_be_disabled_and_the_package_imported_by_name(run_python):
    result = run_python(
        """
        import torch
        print(torch._C._get_privateuse1_backend_name())
        import spyre_device
        print(torch._C._get_privateuse1_backend_name(), torch.ones(2, device="spyre").device)
        """,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["privateuseone", "spyre", "spyre:0"]


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("SPYRE_DEVICE_COUNT", "two", "SPYRE_DEVICE_COUNT must be an integer from 1 to 64, got 'two'"),
    ("SPYRE_MEMORY_CAPACITY", "lots", "SPYRE_MEMORY_CAPACITY must be a byte count"),
    ("SPYRE_INT64", "bogus", "SPYRE_INT64='bogus': expected downcast or native"),
    ("SPYRE_COVERAGE", "/no/such/table.yaml", "SPYRE_COVERAGE=/no/such/table.yaml: no such file"),
])
def test_bad_setting_fails_import_torch_with_one_line(variable, value, message, run_python):
    result = run_python("import torch", **{variable: value})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"spyre: {message}") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "-1", "65", "1.5", "abc"])
def test_device_count_validation(monkeypatch, value):
    monkeypatch.setenv("SPYRE_DEVICE_COUNT", value)
    with pytest.raises(ValueError, match="SPYRE_DEVICE_COUNT must be an integer from 1 to 64"):
        spyre_device._validate_environment()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1024", 1024), ("512MiB", 512 << 20), ("2g", 2 << 30), ("128GiB", 128 << 30), ("1.5KiB", 1536)],
)
def test_memory_capacity_parsing(text, expected):
    assert _C._parse_memory_capacity(text) == expected


@pytest.mark.parametrize("text", ["lots", "12 parsecs", "", "-5"])
def test_memory_capacity_parsing_rejects_bad_values(text):
    with pytest.raises(RuntimeError, match=r"SPYRE_MEMORY_CAPACITY must be a byte count .*got '"):
        _C._parse_memory_capacity(text)
