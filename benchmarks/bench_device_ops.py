"""Small aten ops on the spyre device vs the same ops on cpu, measured side by side.

Every non-minimal op on spyre runs through the Python host fallback, so this
measures the per-op overhead of the device layer (and, separately, of the
simulator's op hooks when they are installed). Prints the ratios of one run.

    .venv/bin/python benchmarks/bench_device_ops.py [--iterations N]
"""

from __future__ import annotations

import argparse
import time

import torch

from spyre_device import hooks

OPS_PER_ITERATION = 10
GOAL_RATIO = 3.0  # issue 18: 10 small ops within 3x of cpu, simulator on


def workload(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A fixed mix of elementwise, reduction, matmul and view ops (10 aten calls)."""
    a = x + y
    b = a * 2.0
    c = b.relu()
    d = c @ w
    e = d.softmax(dim=-1)
    f = e.t().contiguous()
    g = f.view(-1)[:128]
    h = g.exp()
    s = h.sum()
    return s - x.mean()


def seconds_per_iteration(device: str, iterations: int) -> float:
    torch.manual_seed(0)
    x, y, w = (torch.randn(64, 64).to(device) for _ in range(3))
    for _ in range(5):  # warm-up
        workload(x, y, w)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(iterations):
            workload(x, y, w)
        float(workload(x, y, w))  # make sure the last result is materialised
        best = min(best, (time.perf_counter() - start) / (iterations + 1))
    return best


class _Counter:
    """Counts the ops that reach the host fallback."""

    def __init__(self) -> None:
        self.ops = 0

    def before_op(self, op, args, kwargs):
        self.ops += 1

    def after_op(self, *args):
        pass


def fallback_ops_per_iteration() -> int:
    x, y, w = (torch.randn(64, 64).to("spyre") for _ in range(3))
    counter = _Counter()
    hooks.register_op_hooks(counter)
    try:
        workload(x, y, w)
    finally:
        hooks.unregister_op_hooks(counter)
    return counter.ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads for both sides (1 keeps a shared machine's noise out)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    cpu = seconds_per_iteration("cpu", args.iterations)
    installed = hooks.registered_op_hooks()
    for hook in installed:
        hooks.unregister_op_hooks(hook)
    try:
        device_only = seconds_per_iteration("spyre", args.iterations)
    finally:
        for hook in installed:
            hooks.register_op_hooks(hook)
    with_sim = seconds_per_iteration("spyre", args.iterations) if installed else None

    print(f"workload: {OPS_PER_ITERATION} small aten ops on 64x64 float32, best of 3 x {args.iterations} iterations,"
          f" {args.threads} thread(s)")
    print(f"cpu                      {cpu * 1e6:9.1f} us/iteration")
    print(f"spyre (device only)      {device_only * 1e6:9.1f} us/iteration   ratio spyre/cpu = {device_only / cpu:6.1f}x")
    if with_sim is not None:
        print(f"spyre (with simulator)   {with_sim * 1e6:9.1f} us/iteration   ratio spyre/cpu = {with_sim / cpu:6.1f}x"
              f"   (goal <= {GOAL_RATIO}x with default settings: {'met' if with_sim / cpu <= GOAL_RATIO else 'not met'})")
    fallback_ops = fallback_ops_per_iteration()
    print(f"host-fallback calls      {fallback_ops:9d} per iteration")
    print(f"device overhead          {(device_only - cpu) / fallback_ops * 1e6:9.1f} us per fallback call")


if __name__ == "__main__":
    main()
