"""torch.spyre device management, properties, registration helpers, bad device indices."""

import pytest
import torch

from tests.backend.device_helpers import bare_device  # noqa: F401  (fixture)


def test_device_queries():
    assert torch.spyre.is_available()
    assert torch.spyre.device_count() == 1
    assert torch.spyre.current_device() == 0
    assert torch.get_device_module("spyre") is torch.spyre
    assert torch.device("spyre").type == "spyre"


def test_properties_describe_the_card():
    props = torch.spyre.get_device_properties(0)
    assert (props.cores, props.scratchpad_bytes_per_core, props.stick_bytes) == (32, 2 << 20, 128)
    assert props.total_memory == 128 << 30


@pytest.mark.parametrize("index", [1, 7])
def test_unknown_device_index_is_rejected_everywhere(index):
    message = rf"Invalid spyre device index {index}: 1 spyre device\(s\) available"
    with pytest.raises(RuntimeError, match=message):
        torch.empty(2, device=f"spyre:{index}")
    with pytest.raises(RuntimeError, match=message):
        torch.ones(2).to(f"spyre:{index}")
    with pytest.raises(RuntimeError, match=message):
        torch.spyre.set_device(index)
    with pytest.raises(RuntimeError, match=message):
        torch.spyre.get_device_properties(index)
    assert torch.spyre.current_device() == 0


def test_non_spyre_device_is_rejected():
    with pytest.raises(ValueError, match="expected a spyre device, got cpu"):
        torch.spyre.set_device("cpu")


def test_tensor_and_module_helpers(bare_device):
    x = torch.arange(3.0)
    assert not x.is_spyre
    y = x.spyre()
    assert y.is_spyre and y.device == bare_device
    model = torch.nn.Linear(3, 2).spyre()
    assert all(p.device == bare_device for p in model.parameters())
    assert model(y).device == bare_device


def test_pinned_host_memory():
    x = torch.ones(16).pin_memory()
    assert x.is_pinned()
    assert not torch.ones(16).is_pinned()
    assert torch.equal(x.to("spyre", non_blocking=True).cpu(), torch.ones(16))


def test_empty_rejects_unsupported_options(bare_device):
    with pytest.raises(RuntimeError, match="pin_memory=True is only meaningful for CPU tensors"):
        torch.empty(2, device=bare_device, pin_memory=True)
