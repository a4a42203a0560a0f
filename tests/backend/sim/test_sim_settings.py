"""SPYRE_* settings: defaults, overrides and one clear error per bad value."""
import pytest
import torch

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401
from spyre_device.sim.settings import DEFAULT_UNSUPPORTED_DTYPES, settings_from_env
from spyre_device.sim.yaml_files import SimConfigError


def test_defaults():
    s = settings_from_env({})
    assert s.enabled and s.reduced_precision and s.adapters and s.int64 == "downcast"
    assert s.warn_fallback is None
    assert s.unsupported_dtypes == DEFAULT_UNSUPPORTED_DTYPES
    assert "float64" in s.unsupported_dtypes and "complex128" in s.unsupported_dtypes


def test_overrides(tmp_path):
    table = tmp_path / "t.yaml"
    table.write_text("x")
    s = settings_from_env({"SPYRE_INT64": "native", "SPYRE_REDUCED_PRECISION": "0", "SPYRE_COVERAGE": str(table),
                           "SPYRE_WARN_FALLBACK": "yes", "SPYRE_UNSUPPORTED_DTYPES": "float64, int16"})
    assert s.int64 == "native" and not s.reduced_precision and s.coverage == table and s.warn_fallback
    assert s.unsupported_dtypes == ("float64", "int16")
    assert all(isinstance(getattr(torch, d), torch.dtype) for d in s.unsupported_dtypes)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SPYRE_INT64": "wrap"}, "SPYRE_INT64='wrap': expected downcast or native"),
        ({"SPYRE_REDUCED_PRECISION": "maybe"}, "SPYRE_REDUCED_PRECISION='maybe': expected 1 or 0"),
        ({"SPYRE_COVERAGE": "/nonexistent/t.yaml"}, "SPYRE_COVERAGE=/nonexistent/t.yaml: no such file"),
        ({"SPYRE_UNSUPPORTED_DTYPES": "float64,double9"}, "'double9' is not a torch dtype"),
    ],
)
def test_bad_values(env, message):
    with pytest.raises(SimConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        settings_from_env(env)
