"""The device on each supported torch: honest package metadata and the C++ API differences.

The same tests run on torch 2.13 (the project's) and 2.14 (in its environment, docs/backend.md
"Supported torch versions"); the version-specific ones state which release they describe.
"""
import re
from importlib import metadata

import pytest
import torch

TORCH_MINOR = tuple(int(p) for p in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())


def test_the_installed_package_requires_the_torch_minor_it_was_built_against():
    # A range such as torch>=2.13,<2.14 would let pip swap torch under the compiled binary.
    assert f"torch=={TORCH_MINOR[0]}.{TORCH_MINOR[1]}.*" in metadata.requires("spyre-device")
    assert not [r for r in metadata.requires("spyre-device") if r.startswith("torch") and "*" not in r]


@pytest.mark.skipif(TORCH_MINOR < (2, 14), reason="torch 2.14 added Generator.philox_state")
def test_philox_state_is_refused_by_name_on_a_spyre_generator():
    generator = torch.Generator("spyre")
    with pytest.raises(NotImplementedError, match="philox_state is not supported by spyre generators"):
        generator.philox_state(4)
    # The generator itself is untouched: its stream draws the same numbers as before the call.
    generator.manual_seed(7)
    first = torch.rand(3, device="spyre", generator=generator).cpu()
    generator.manual_seed(7)
    assert torch.equal(torch.rand(3, device="spyre", generator=generator).cpu(), first)


@pytest.mark.skipif(TORCH_MINOR >= (2, 14), reason="describes torch before 2.14")
def test_generators_have_no_philox_state_before_2_14():
    assert not hasattr(torch.Generator("spyre"), "philox_state")


def test_spyre_random_numbers_match_the_cpu_stream_on_every_torch():
    # Identical simulator behaviour across torch versions starts with identical random streams.
    torch.manual_seed(1234)
    on_spyre = torch.randn(5, device="spyre").cpu()
    torch.manual_seed(1234)
    assert torch.equal(on_spyre, torch.randn(5))
