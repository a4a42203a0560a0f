"""Simulated time and wall-clock overhead of the spyre simulator vs cpu: matmul, softmax, MLP, training step.

Runs the same fixed workload on cpu and on spyre side by side in one process and prints, per
workload: cpu wall time, spyre wall time, the overhead ratio, the simulated card time and the
op mix the simulator saw. Usage: .venv/bin/python benchmarks/bench_sim_workload.py [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def make_inputs(device: str, tokens: int, width: int, hidden: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    cpu = {
        "x": torch.randn(tokens, width, generator=gen),
        "w": torch.randn(width, width, generator=gen) / width**0.5,
        "w1": torch.randn(hidden, width, generator=gen) / width**0.5,
        "b1": torch.zeros(hidden),
        "w2": torch.randn(width, hidden, generator=gen) / hidden**0.5,
        "b2": torch.zeros(width),
    }
    moved: dict = {name: t.to(device) for name, t in cpu.items()}
    moved["small"] = small_mlp(device)
    return moved


def matmul(t):
    return t["x"] @ t["w"]


def softmax(t):
    return torch.softmax(t["x"], dim=-1)


def mlp(t):
    return F.linear(F.gelu(F.linear(t["x"], t["w1"], t["b1"])), t["w2"], t["b2"])


def train_step(t):
    """One SGD step of a small MLP (64 -> 128 -> 10, batch 32): forward, cross-entropy, backward, update."""
    small = t["small"]
    x, target, w1, b1, w2, b2 = small
    for p in (w1, b1, w2, b2):
        p.grad = None
    loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), target)
    loss.backward()
    with torch.no_grad():
        for p in (w1, b1, w2, b2):
            p.sub_(p.grad, alpha=0.01)
    return loss


def small_mlp(device: str) -> tuple:
    gen = torch.Generator().manual_seed(1)
    cpu = (torch.randn(32, 64, generator=gen), torch.randint(0, 10, (32,), generator=gen),
           torch.randn(128, 64, generator=gen) / 8, torch.zeros(128),
           torch.randn(10, 128, generator=gen) / 11, torch.zeros(10))
    moved = [t.to(device) for t in cpu]
    for p in moved[2:]:
        p.requires_grad_()
    return tuple(moved)


WORKLOADS = {"matmul": matmul, "softmax": softmax, "mlp": mlp, "train_step": train_step}


def wall(fn, inputs, repeat: int) -> float:
    """Median wall seconds of one call (after one warm-up call)."""
    fn(inputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads for both sides")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sim = torch.spyre.sim
    cpu = make_inputs("cpu", args.tokens, args.width, args.hidden)
    spyre = make_inputs("spyre", args.tokens, args.width, args.hidden)
    rows = []
    for name, fn in WORKLOADS.items():
        for reduced in (True, False):
            repeat = args.repeat * 20 if name == "train_step" else args.repeat  # sub-millisecond: more samples
            with sim.precision(reduced):
                cpu_s = wall(fn, cpu, repeat)
                spyre_s = wall(fn, spyre, repeat)
                with sim.capture() as cap:
                    fn(spyre)
            result = cap.result
            rows.append({
                "workload": name,
                "reduced_precision": reduced,
                "cpu_wall_ms": cpu_s * 1e3,
                "spyre_wall_ms": spyre_s * 1e3,
                "wall_overhead_ratio": spyre_s / cpu_s,
                "simulated_ms": result["sim_seconds"] * 1e3,
                "ops": {op: rec["count"] for op, rec in result["ops"].items()},
                "fallback_ops": result["fallback_ops"],
            })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"shapes: x ({args.tokens}, {args.width}), w ({args.width}, {args.width}), "
          f"MLP {args.width}->{args.hidden}->{args.width}, train_step: 64->128->10 batch 32 SGD, fp32, "
          f"median of {args.repeat}, {args.threads} thread(s)")
    print(f"{'workload':<10} {'reduced':<8} {'cpu ms':>9} {'spyre ms':>9} {'overhead':>9} {'simulated ms':>13}  ops")
    for r in rows:
        ops = ", ".join(f"{op.removeprefix('aten::')}x{n}" for op, n in r["ops"].items())
        print(f"{r['workload']:<10} {str(r['reduced_precision']):<8} {r['cpu_wall_ms']:9.3f} {r['spyre_wall_ms']:9.3f} "
              f"{r['wall_overhead_ratio']:8.2f}x {r['simulated_ms']:13.4f}  {ops}")
    step = next(r for r in rows if r["workload"] == "train_step" and r["reduced_precision"])
    print(f"small-MLP training step, default settings: {step['wall_overhead_ratio']:.2f}x cpu "
          f"(goal <= 1.5x: {'met' if step['wall_overhead_ratio'] <= 1.5 else 'not met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
