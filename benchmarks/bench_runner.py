"""Runner benchmarks, measured side by side in one run (never part of `make test`).

1. Tests per second on spyre (local executor) with the warm runner (one pytest session per shard,
   forked from an interpreter that imported torch, op_db and the device once, forking a child
   per file; the interpreter's start is timed apart, since a run starts it while selecting) and
   cold (a new interpreter per file), and on cpu (warm): ratios.
2. The same shards on one vs two Celery workers (real redis-server and `relay-cli worker`): a speedup.

    .venv/bin/python benchmarks/bench_runner.py [--files test_binary_ufuncs.py,test_unary_ufuncs.py]

Uses the demo upstream (`relay-cli demo init`) in a temporary directory. Prints one line per
measurement and the ratios; record them in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from relay.execution.base import ShardJob
from relay.execution.runner import RunnerOptions, run_shard
from relay.execution.runner.process import device_env
from relay.execution.runner.warm import POOL
from relay.storage import Run, init_db, session_scope

DEFAULT_FILES = "test_binary_ufuncs.py,test_unary_ufuncs.py,test_reductions.py,test_shape_ops.py"


def collect(test_dir: Path, files: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(test_dir), "-o", "addopts=", *files], cwd=test_dir, env=env,
                          capture_output=True, text=True, check=False)
    return ["test/" + line.strip() for line in done.stdout.splitlines() if "::" in line]


def tests_per_second(checkout: Path, ids: list[str], extra_env: dict[str, str], warm: bool = True) -> tuple[float, int, float]:
    """(tests/s, tests, seconds the warm interpreter took to start). Warm, the interpreter is started
    first and its start timed apart, as a run starts it while it selects (relay.execution.runner.warm)."""
    started = 0.0
    if warm:
        begin = time.perf_counter()
        POOL.prewarm(sys.executable, device_env(checkout, extra_env), checkout / "test").wait_ready()
        started = time.perf_counter() - begin
    start = time.perf_counter()
    records = run_shard(checkout, ids, RunnerOptions(reruns=0, env=extra_env, warm=warm))
    return len(records) / (time.perf_counter() - start), len(records), started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def celery_seconds(workdir: Path, checkout: Path, shards: list[list[str]], workers: int, broker: str) -> float:
    from relay.execution.celery_executor import CeleryExecutor

    database = f"sqlite:///{workdir / f'bench-{workers}.db'}"
    init_db(database)
    with session_scope(database) as session:
        run = Run(from_ref="2.13", to_ref="2.14", status="running", executor="celery")
        session.add(run)
        session.flush()
        run_id = run.id
    env = {**os.environ, "RELAY_DATABASE_URL": database, "RELAY_DATA_DIR": str(workdir)}
    procs = []
    for index in range(workers):
        log = open(workdir / f"worker-{workers}-{index}.log", "wb")  # noqa: SIM115 - closed with the process
        procs.append(subprocess.Popen([sys.executable, "-m", "relay", "worker", "--broker", broker,
                                       "--hostname", f"bench{workers}-{index}@%h"], env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
                " ready." in (workdir / f"worker-{workers}-{i}.log").read_text(errors="replace") for i in range(workers)):
            time.sleep(0.2)
        jobs = [ShardJob(run_id, i, tests, upstream=str(checkout), sha=None, checkout=str(checkout), reruns=0)
                for i, tests in enumerate(shards)]
        start = time.perf_counter()
        CeleryExecutor(broker).execute(jobs)
        return time.perf_counter() - start
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default=DEFAULT_FILES, help="demo upstream test files (comma separated)")
    parser.add_argument("--no-celery", action="store_true", help="only the local executor measurements")
    args = parser.parse_args()
    files = args.files.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        workdir = Path(tmp)
        checkout = workdir / "upstream"
        subprocess.run([sys.executable, "-m", "relay", "demo", "init", str(checkout)], check=True, capture_output=True)
        subprocess.run(["git", "checkout", "-q", "v2.14.0"], cwd=checkout, check=True)
        test_dir = checkout / "test"
        cpu_env = {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "cpu", "TORCH_TEST_DEVICES": ""}
        spyre_ids = collect(test_dir, files, device_env(checkout))
        cpu_ids = collect(test_dir, files, device_env(checkout, cpu_env))
        spyre_rate, spyre_n, spyre_start = tests_per_second(checkout, spyre_ids, {})
        cold_rate, _, _ = tests_per_second(checkout, spyre_ids, {}, warm=False)
        cpu_rate, cpu_n, cpu_start = tests_per_second(checkout, cpu_ids, cpu_env)
        print(f"load average: {os.getloadavg()[0]:.1f}")
        print(f"local executor, spyre, warm: {spyre_n} tests, {spyre_rate:.2f} tests/s "
              f"(goal >= 20; the warm interpreter's start, {spyre_start:.1f} s, apart)")
        print(f"local executor, spyre, cold: {spyre_n} tests, {cold_rate:.2f} tests/s")
        print(f"local executor, cpu, warm:   {cpu_n} tests, {cpu_rate:.2f} tests/s (start {cpu_start:.1f} s apart)")
        print(f"warm/cold throughput ratio: {spyre_rate / cold_rate:.2f}")
        print(f"spyre/cpu throughput ratio: {spyre_rate / cpu_rate:.2f}")
        if args.no_celery:
            return 0

        redis = subprocess.Popen(["redis-server", "--port", str(port := free_port()), "--save", "",
                                  "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            broker = f"redis://127.0.0.1:{port}/0"
            shards = [spyre_ids[0::2], spyre_ids[1::2]]
            one = celery_seconds(workdir, checkout, shards, 1, broker)
            two = celery_seconds(workdir, checkout, shards, 2, broker)
        finally:
            redis.terminate()
            redis.wait()
        print(f"celery, 2 shards, 1 worker:  {one:.1f} s")
        print(f"celery, 2 shards, 2 workers: {two:.1f} s")
        print(f"two-worker speedup: {one / two:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
