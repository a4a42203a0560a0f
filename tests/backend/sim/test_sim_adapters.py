"""Adapters: each rewrite equals the original op on the CPU, and is declared once."""
import pytest
import torch

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401
from spyre_device.sim.adapters import ADAPTERS, ADAPTERS_BY_OP, adapter_for, original_op
from spyre_device.sim.coverage import Status, load_coverage


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_adapter_equals_the_original_on_cpu(adapter):
    op = original_op(adapter)
    examples = adapter.examples()
    assert examples
    for args, kwargs in examples:
        assert adapter.applies(args, kwargs), (adapter.name, args[1:])
        expected = op(*args, **kwargs)
        actual = adapter.rewrite(*args, **kwargs)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, equal_nan=True)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_adapter_targets_an_op_the_card_does_not_run_natively(adapter):
    # Unsupported ops run only through their adapter; fallback ops run on the card when it applies.
    assert load_coverage().resolve(f"aten::{adapter.op}").status in (Status.UNSUPPORTED, Status.FALLBACK)


def test_pow_adapter_only_claims_small_integer_exponents():
    pow_adapter = adapter_for("aten::pow.Tensor_Scalar")
    x = torch.randn(4)
    assert pow_adapter.applies((x, 3.0), {}) and pow_adapter.applies((x, -2), {})
    assert not pow_adapter.applies((x, 2.5), {})
    assert not pow_adapter.applies((x, 5.0), {})
    assert not pow_adapter.applies((x, True), {})
    assert not pow_adapter.applies((torch.arange(3), -1), {})  # integer ** negative stays an error


def test_one_adapter_per_op():
    assert len(ADAPTERS_BY_OP) == len(ADAPTERS)
    assert adapter_for("aten::add.Tensor") is None
