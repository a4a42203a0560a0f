"""Webhook intake under open-loop load, side by side with a no-op route on the same server, SQLite and PostgreSQL.

The relay runs as ``relay-cli serve`` runs it (``build_service`` + waitress, 8 threads) in a process
of its own, with a no-op POST route added to the same app. This process sends, open loop, --rate
signed deliveries per second to ``/webhook/github`` and, interleaved half a period later, --rate
requests per second with the same bodies to the no-op route, for --seconds. Open loop: each request
leaves at its scheduled time whatever the answers before it did, and its latency is measured from
that scheduled time, so a server that falls behind shows it (no coordinated omission).

The payload mix is GitHub's real example deliveries (tests/fixtures/github-webhooks) in a PyTorch-like
proportion: pull_request synchronize/opened/labeled/closed, push, check_run, repository_dispatch and
ping, 10% of them redeliveries of an earlier X-GitHub-Delivery. They come from repositories the
default trigger policy does not watch, so they are stored as ``ignored`` and no run starts: what is
timed is the acknowledgement (verify HMAC, bound, parse, decide, durable group commit, answer).

Afterwards the database is checked: every acknowledged delivery id stored exactly once, nothing
else stored, every answer a 202/200 (first arrival) or 200 ``duplicate`` (redelivery).

Durability is real: SQLite in WAL mode with its default synchronous=FULL, PostgreSQL with fsync on.

Usage: .venv/bin/python benchmarks/bench_webhook.py [--rate 200] [--seconds 30] [--database sqlite,postgres]
       [--database-url URL (instead of a throwaway PostgreSQL)]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "github-webhooks"
SECRET = "bench-secret-" + uuid.uuid4().hex
POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
# (fixture, X-GitHub-Event, share of deliveries): PyTorch's traffic is mostly PR pushes.
MIX = [("pull_request.synchronize", "pull_request", 40), ("pull_request.opened", "pull_request", 8),
       ("pull_request.labeled", "pull_request", 12), ("pull_request.closed", "pull_request", 8),
       ("push", "push", 14), ("check_run.rerequested", "check_run", 6),
       ("repository_dispatch", "repository_dispatch", 6), ("ping", "ping", 6)]
REDELIVERED = 0.10


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


# --- the server process -------------------------------------------------------------------
def serve(port: int, database_url: str, data_dir: str, threads: int) -> None:
    import waitress

    from relay.config import Settings
    from relay.intake.policy import TriggerPolicy
    from relay.intake.service import build_service

    settings = Settings(data_dir=Path(data_dir), database_url=database_url, webhook_secret=os.environ["BENCH_SECRET"])
    service = build_service(settings, TriggerPolicy())  # the real receiver, executor and sweeper (not started)
    service.app.add_url_rule("/_bench/noop", "bench_noop", lambda: "", methods=["POST"])
    waitress.serve(service.app, host="127.0.0.1", port=port, threads=threads, ident="spyre-relay", _quiet=True)


@contextmanager
def relay_server(database_url: str, threads: int):
    data_dir = tempfile.mkdtemp(prefix="bench-webhook-")
    port = free_port()
    log = open(Path(data_dir) / "relay.log", "w+")  # a file, not a pipe: a full pipe would stall the relay
    process = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--database-url", database_url,
                                "--data-dir", data_dir, "--threads", str(threads)],
                               env={**os.environ, "BENCH_SECRET": SECRET}, stderr=log, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise SystemExit(f"relay did not start: {log.read()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.seek(0)
        errors = [line for line in log.read().splitlines() if line.strip()]
        if errors:
            print(f"relay log ({len(errors)} lines), first: {errors[:3]}", file=sys.stderr)
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def postgres_cluster():
    """A throwaway PostgreSQL 15 cluster with fsync on (the tests' clusters run with -F)."""
    def as_postgres(command):
        return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command
    workdir = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
    data, port = workdir / "data", free_port()
    subprocess.run(as_postgres([str(POSTGRES_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                "-E", "UTF8"]), check=True, capture_output=True)
    subprocess.run(as_postgres([str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-l", str(workdir / "log"), "-w",
                                "-o", f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1", "start"]),
                   check=True, capture_output=True)
    try:
        subprocess.run(as_postgres([str(POSTGRES_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U",
                                    "postgres", "relay"]), check=True, capture_output=True)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/relay"
    finally:
        subprocess.run(as_postgres([str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
                       capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)


# --- the load -----------------------------------------------------------------------------
def deliveries(total: int, rng: random.Random) -> list[tuple[str, str, bytes]]:
    """(event, delivery id, body) in the mix's proportions, some redelivering an earlier id with its body."""
    bodies = {name: json.dumps(json.loads((FIXTURES / f"{name}.json").read_text())).encode() for name, _, _ in MIX}
    names = [(name, event) for name, event, share in MIX for _ in range(share)]
    sent: list[tuple[str, str, bytes]] = []
    for _ in range(total):
        if sent and rng.random() < REDELIVERED:
            sent.append(rng.choice(sent))
        else:
            name, event = rng.choice(names)
            sent.append((event, str(uuid.uuid4()), bodies[name]))
    return sent


class OpenLoop:
    """Sends each request at its scheduled time from a pool of keep-alive connections."""

    def __init__(self, port: int, workers: int) -> None:
        self.port = port
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-client")

    def _connection(self) -> http.client.HTTPConnection:
        if not hasattr(self.local, "connection"):
            self.local.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return self.local.connection

    def _send(self, scheduled: float, path: str, body: bytes, headers: dict) -> tuple[float, int, dict]:
        for attempt in (1, 2):  # a keep-alive connection the server closed is reopened once
            try:
                connection = self._connection()
                connection.request("POST", path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError):
                self.local.__dict__.pop("connection", None)
                if attempt == 2:
                    return (time.perf_counter() - scheduled) * 1000, 0, {}
        answer = json.loads(data) if response.getheader("Content-Type", "").startswith("application/json") else {}
        return (time.perf_counter() - scheduled) * 1000, response.status, answer

    def run(self, schedule: list[tuple[float, str, bytes, dict]]) -> list:
        """``schedule``: (offset seconds, path, body, headers); returns the futures in schedule order."""
        start = time.perf_counter() + 0.5
        futures = []
        for offset, path, body, headers in schedule:
            when = start + offset
            delay = when - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            futures.append(self.pool.submit(self._send, when, path, body, headers))
        return [future.result() for future in futures]


def measure(database_url: str, label: str, args) -> tuple[dict, list[str]]:
    from relay.intake.signature import sign

    rng = random.Random(args.seed)
    load = deliveries(int(args.rate * args.seconds), rng)
    period = 1 / args.rate
    schedule = []
    for index, (event, delivery, body) in enumerate(load):
        hook_headers = {"Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                        "X-Hub-Signature-256": sign(SECRET, body)}
        schedule.append((index * period, "/webhook/github", body, hook_headers))
        schedule.append((index * period + period / 2, "/_bench/noop", body, {"Content-Type": "application/json"}))
    with relay_server(database_url, args.threads) as port:
        loop = OpenLoop(port, args.clients)
        # Warm up: every client connection opened, then a second of both routes (webhook bodies that
        # are pings under ids of their own, checked below like the rest).
        loop.run([(0.0, "/_bench/noop", b"{}", {})] * (4 * args.clients))
        ping = (FIXTURES / "ping.json").read_bytes()
        loop.run([(i / args.rate, "/webhook/github", ping, {
            "Content-Type": "application/json", "X-GitHub-Event": "ping", "X-GitHub-Delivery": f"warm-up-{i}",
            "X-Hub-Signature-256": sign(SECRET, ping)}) for i in range(int(args.rate))])
        started = time.perf_counter()
        answers = loop.run(schedule)
        elapsed = time.perf_counter() - started - 0.5
        loop.pool.shutdown()
    hook = [(load[i // 2], answers[i]) for i in range(0, len(answers), 2)]
    noop = [answers[i] for i in range(1, len(answers), 2)]
    return check_and_summarise(database_url, label, hook, noop, elapsed)


def check_and_summarise(database_url: str, label: str, hook, noop, elapsed: float) -> tuple[dict, list[str]]:
    from sqlalchemy import func, select

    from relay.storage import Event, Run, session_scope

    problems: list[str] = []
    acknowledged: set[str] = set()
    firsts = Counter()
    for (_event, delivery, _body), (_ms, status, answer) in hook:
        if status in (200, 202) and answer.get("status") in ("ignored", "pong"):
            firsts[delivery] += 1
            acknowledged.add(delivery)
        elif status == 200 and answer.get("status") == "duplicate":
            acknowledged.add(delivery)
        else:
            problems.append(f"{label}: delivery {delivery}: answer {status} {answer}")
    unique = {delivery for (_e, delivery, _b), _ in hook}
    problems += [f"{label}: delivery {d} acknowledged as new {firsts[d]} times" for d in unique if firsts[d] > 1]
    with session_scope(database_url) as session:
        stored = dict(session.execute(select(Event.delivery_id, func.count()).group_by(Event.delivery_id)).all())
        runs = session.execute(select(func.count()).select_from(Run)).scalar_one()
    lost = [d for d in acknowledged if stored.get(d) != 1]
    extra = [d for d in stored if d not in unique and not d.startswith("warm-up-")]
    if lost:
        problems.append(f"{label}: {len(lost)} acknowledged deliveries not stored exactly once")
    if extra or runs:
        problems.append(f"{label}: {len(extra)} unexpected events, {runs} runs")
    bad_noop = Counter(status for _ms, status, _ in noop if status != 200)
    if bad_noop:
        problems.append(f"{label}: no-op answers {dict(bad_noop)}")
    hook_ms = [ms for _, (ms, _s, _a) in hook]
    noop_ms = [ms for ms, _s, _a in noop]
    row = {"label": label, "sent": len(hook), "unique": len(unique), "acknowledged": len(acknowledged),
           "lost": len(lost) + (len(unique) - len(acknowledged)), "seconds": elapsed,
           "hook": (percentile(hook_ms, .5), percentile(hook_ms, .99), max(hook_ms)),
           "noop": (percentile(noop_ms, .5), percentile(noop_ms, .99), max(noop_ms))}
    return row, problems


def profile(count: int) -> None:
    """Where one delivery's CPU goes: ``count`` deliveries of the mix through the app in this process
    (Flask's test client, SQLite, the real journal), under cProfile."""
    import cProfile
    import pstats

    from relay.config import Settings
    from relay.intake.policy import TriggerPolicy
    from relay.intake.service import build_service
    from relay.intake.signature import sign

    tmp = Path(tempfile.mkdtemp(prefix="bench-profile-"))
    service = build_service(Settings(data_dir=tmp, webhook_secret=SECRET), TriggerPolicy())
    client = service.app.test_client()
    load = deliveries(count, random.Random(1))

    def send_all():
        for event, delivery, body in load:
            client.post("/webhook/github", data=body, headers={
                "Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                "X-Hub-Signature-256": sign(SECRET, body)})
    send_all.__name__ = "deliveries"
    load_warm, load = load[:20], load[20:]
    for event, delivery, body in load_warm:
        client.post("/webhook/github", data=body, headers={"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                                                            "X-Hub-Signature-256": sign(SECRET, body)})
    cpu, wall = time.process_time(), time.perf_counter()
    profiler = cProfile.Profile()
    profiler.runcall(send_all)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    service.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(load)} deliveries one at a time: {cpu / len(load) * 1000:.2f} ms CPU and "
          f"{wall / len(load) * 1000:.2f} ms wall each (profiled, so slower than unprofiled)")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0, help="deliveries per second, and no-op requests too")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--database", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL URL instead of a throwaway cluster")
    parser.add_argument("--threads", type=int, default=8, help="waitress threads, as relay-cli serve (default 8)")
    parser.add_argument("--clients", type=int, default=64, help="client connections (open loop: enough to never wait)")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="instead: profile N deliveries in this process and print where the time goes")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.database_url, args.data_dir, args.threads)
        return 0
    if args.profile:
        profile(args.profile)
        return 0

    rows, problems = [], []
    for database in args.database.split(","):
        if database == "sqlite":
            tmp = Path(tempfile.mkdtemp(prefix="bench-sqlite-"))
            row, found = measure(f"sqlite:///{tmp / 'relay.db'}", "SQLite", args)
            shutil.rmtree(tmp, ignore_errors=True)
        elif database == "postgres" and args.database_url:
            row, found = measure(args.database_url, "PostgreSQL", args)
        elif database == "postgres":
            with postgres_cluster() as url:
                row, found = measure(url, "PostgreSQL", args)
        else:
            parser.error(f"unknown database {database!r}")
        rows.append(row)
        problems += found

    print(f"open loop: {args.rate:g} deliveries/s and {args.rate:g} no-op requests/s, interleaved, for "
          f"{args.seconds:g} s; waitress {args.threads} threads in its own process; real GitHub payload mix "
          f"({int(REDELIVERED * 100)}% redeliveries); latency from each request's scheduled send time")
    print()
    print(f"{'database':11} {'route':16} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'sent/s':>8} {'lost':>5}")
    for row in rows:
        rate = row["sent"] / row["seconds"]
        print(f"{row['label']:11} {'/webhook/github':16} {row['hook'][0]:8.1f} {row['hook'][1]:8.1f} "
              f"{row['hook'][2]:8.1f} {rate:8.1f} {row['lost']:5d}")
        print(f"{'':11} {'no-op route':16} {row['noop'][0]:8.1f} {row['noop'][1]:8.1f} {row['noop'][2]:8.1f}")
        print(f"{'':11} ratio p50 {row['hook'][0] / row['noop'][0]:.1f}, p99 {row['hook'][1] / row['noop'][1]:.1f} "
              f"(webhook / no-op); {row['unique']} unique ids, {row['acknowledged']} acknowledged")
    print()
    verdicts = [f"{r['label']}: p99 {r['hook'][1]:.1f} ms {'<=' if r['hook'][1] <= 50 else '>'} 50 ms, "
                f"lost {r['lost']}" for r in rows]
    print("target (>= 200/s for 30 s, p99 <= 50 ms, 0 lost): " + "; ".join(verdicts))
    if problems:
        print("FAILED:")
        for problem in problems[:20]:
            print(f"  {problem}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
