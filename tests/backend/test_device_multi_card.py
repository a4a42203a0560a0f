"""Two simulated cards with a small capacity (SPYRE_DEVICE_COUNT=2, SPYRE_MEMORY_CAPACITY=64MiB,
read at start-up, hence a subprocess)."""

from tests.backend.device_helpers import run_python  # noqa: F401  (fixture: a fresh interpreter)

TWO_CARDS = r"""
import spyre_device  # by name, before torch: torch's autoload re-enters the package
import torch

assert torch.spyre.device_count() == 2
a = torch.arange(6.0, device="spyre:0").view(2, 3)
b = a.to("spyre:1")
assert b.device == torch.device("spyre", 1) and torch.equal(b.cpu(), a.cpu())
c = b.t().to("spyre:0")                   # strided source across cards
assert torch.equal(c.cpu(), a.cpu().t())
d = torch.empty(2, 3, device="spyre:1")
d.copy_(a)                                 # copy_ between cards
assert torch.equal(d.cpu(), a.cpu())
assert torch.spyre.transfer_stats()["device_to_device_count"] == 3

try:
    a + b
except RuntimeError as err:
    assert "Expected all tensors to be on the same device, but found at least two devices, spyre:0 and spyre:1" in str(err)
else:
    raise AssertionError("mixed cards did not raise")

assert (b * 2).device.index == 1          # fallback results stay on their card
with torch.spyre.device(1):
    assert torch.spyre.current_device() == 1
    e = torch.ones(4, device="spyre")
    assert e.device.index == 1
    assert torch.spyre.current_stream().device_index == 1
assert torch.spyre.current_device() == 0
side = torch.spyre.Stream("spyre:1")
with torch.spyre.stream(side):            # like CUDA, a stream's block runs on its card
    assert torch.spyre.current_device() == 1 and torch.spyre.current_stream(1) == side
    assert torch.ones(1, device="spyre").device.index == 1
assert torch.spyre.current_device() == 0 and torch.spyre.current_stream(1).stream_id == 0

before0 = torch.spyre.memory_allocated(0)
before1 = torch.spyre.memory_allocated(1)
f = torch.empty(32, device="spyre:1")
assert torch.spyre.memory_allocated(1) == before1 + 128
assert torch.spyre.memory_allocated(0) == before0

torch.spyre.set_device(1)
assert torch.empty(1, device="spyre").device.index == 1
torch.spyre.set_device(0)

g0 = torch.randn(4, device="spyre:1", generator=torch.Generator("spyre:1").manual_seed(3))
g1 = torch.randn(4, device="spyre:1", generator=torch.Generator("spyre:1").manual_seed(3))
assert torch.equal(g0.cpu(), g1.cpu())

# SPYRE_MEMORY_CAPACITY=64MiB applies to each card; accounts are separate.
assert torch.spyre.memory_capacity(0) == torch.spyre.memory_capacity(1) == 64 << 20
big = torch.empty(40 << 20, dtype=torch.uint8, device="spyre:1")
try:
    torch.empty(40 << 20, dtype=torch.uint8, device="spyre:1")
except torch.OutOfMemoryError as err:
    assert "on spyre:1" in str(err)
else:
    raise AssertionError("card 1 went over its capacity")
also_big = torch.empty(40 << 20, dtype=torch.uint8, device="spyre:0")  # card 0 still has room
del big, also_big

try:
    torch.empty(1, device="spyre:2")
except RuntimeError as err:
    assert "Invalid spyre device index 2: 2 spyre device(s) available" in str(err)
else:
    raise AssertionError("spyre:2 did not raise")
print("OK")
"""


def test_two_cards_copy_and_keep_separate_accounts(run_python):
    result = run_python(TWO_CARDS, SPYRE_DEVICE_COUNT="2", SPYRE_MEMORY_CAPACITY="64MiB")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "OK"
