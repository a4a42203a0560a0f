"""Helpers shared by the demo tests (imported as ``common_demo`` from the test/ directory)."""
import torch


def make_pair(shape, device, dtype, *, low=-2.0, high=2.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.empty(shape).uniform_(low, high, generator=gen)
    b = torch.empty(shape).uniform_(low, high, generator=gen)
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def make_input(shape, device, dtype, *, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)


def check_against_cpu(testcase, fn, *inputs, atol=1e-3, rtol=1e-3):
    expected = fn(*(t.cpu() for t in inputs))
    actual = fn(*inputs)
    testcase.assertEqual(actual.cpu(), expected, atol=atol, rtol=rtol)


def linear_reference(x, w):
    """F.linear written out as a matmul, for value checks."""
    return x @ w.t()
