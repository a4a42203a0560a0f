"""Webhook acknowledgement latency and throughput on loopback, with zero lost and zero duplicated deliveries.

Starts the real relay as ``relay-cli serve`` does (``build_service`` + waitress, same thread count)
on a free loopback port, with a temporary SQLite database and a webhook secret, and sends
--deliveries signed deliveries from --clients concurrent clients (``requests``, one keep-alive
session per client). Half of the deliveries are redeliveries of an earlier X-GitHub-Delivery id,
so concurrent redeliveries race the original through the dedupe claim.

What is measured is the acknowledgement path (read body, verify HMAC, parse, decide, persist the
event with its decision, answer): the deliveries are ``pull_request`` ``opened`` events (the
project's 24 KB fixture) for a repository the default trigger policy does not watch. The relay
stores them as ``ignored`` and starts no run, so nothing in the relay is replaced by a fake and no
pipeline work mixes into the timing. (``ping`` would skip the pull_request payload validation.)

Side by side, in the same process and on the same waitress server, a no-op Flask route added to
the same app is timed with the same clients and request count; the report gives p50(webhook) /
p50(no-op). The two are interleaved in rounds so load from the rest of the machine hits both.

Afterwards the database is checked: every unique delivery id stored exactly once, no other rows,
every stored event ``ignored``, no runs created, nothing submitted to the executor; every response
a 202 (first arrival) or 200 ``duplicate`` (redelivery), exactly one 202 per delivery id.

Usage: .venv/bin/python benchmarks/bench_webhook.py [--deliveries 500] [--clients 8] [--threads 8]
       [--rounds 4]
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
import waitress
from sqlalchemy import func, select

from relay.config import Settings
from relay.intake.policy import TriggerPolicy
from relay.intake.service import build_service
from relay.intake.signature import sign
from relay.storage import Event, Run, session_scope

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "github-webhooks" / "pull_request.opened.json"
UNWATCHED_REPO = "bench-org/not-watched"
SECRET = "bench-secret-" + uuid.uuid4().hex


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def schedule(total: int, rng: random.Random) -> list[str]:
    """``total`` delivery ids, half new and half redeliveries of an id that appears earlier."""
    ids: list[str] = []
    seen: list[str] = []
    for index in range(total):
        if index % 2 == 1 and seen:
            ids.append(rng.choice(seen))
        else:
            delivery = str(uuid.uuid4())
            seen.append(delivery)
            ids.append(delivery)
    return ids


class Clients:
    """K clients, each with its own keep-alive session, timing each request end to end."""

    def __init__(self, count: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="bench-client")
        self.local = threading.local()

    def session(self) -> requests.Session:
        if not hasattr(self.local, "session"):
            self.local.session = requests.Session()
        return self.local.session

    def run(self, jobs: list, send) -> tuple[list[tuple[float, int, dict]], float]:
        def one(job):
            started = time.perf_counter()
            response = send(self.session(), job)
            elapsed = (time.perf_counter() - started) * 1000
            body = response.json() if response.headers.get("Content-Type", "").startswith("application/json") else {}
            return elapsed, response.status_code, body
        started = time.perf_counter()
        results = list(self.pool.map(one, jobs))
        return results, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=500, help="signed deliveries to send (default 500)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--threads", type=int, default=8, help="waitress threads, as relay-cli serve (default 8)")
    parser.add_argument("--rounds", type=int, default=4, help="alternating webhook/no-op rounds (default 4)")
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args(argv)
    if args.deliveries < 2 or args.clients < 1 or args.rounds < 1:
        parser.error("need --deliveries >= 2, --clients >= 1, --rounds >= 1")

    payload = json.loads(FIXTURE.read_text())
    payload["repository"]["full_name"] = UNWATCHED_REPO
    body = json.dumps(payload).encode()
    signature = sign(SECRET, body)
    policy = TriggerPolicy()  # the defaults relay-cli serve uses without --policy
    assert not policy.watches(UNWATCHED_REPO)

    tmp = Path(tempfile.mkdtemp(prefix="bench-webhook-"))
    settings = Settings(data_dir=tmp, webhook_secret=SECRET)
    db_url = settings.resolved_database_url
    service = build_service(settings, policy)  # the real receiver, BackgroundThread and sweeper (not started)
    submitted: list[str] = []
    real_submit = service.executor.submit

    def counting_submit(event_id):  # counts; still the real executor behind it
        submitted.append(event_id)
        return real_submit(event_id)
    service.executor.submit = counting_submit

    def noop():
        return ""
    service.app.add_url_rule("/_bench/noop", "bench_noop", noop, methods=["POST"])

    port = free_port()
    server = waitress.create_server(service.app, host="127.0.0.1", port=port, threads=args.threads,
                                    ident="spyre-relay")
    server_thread = threading.Thread(target=server.run, daemon=True)
    server_thread.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if requests.get(f"{url}/healthz", timeout=1).ok:
                break
        except requests.ConnectionError:
            time.sleep(0.05)

    def send_delivery(session: requests.Session, delivery: str) -> requests.Response:
        return session.post(f"{url}/webhook/github", data=body, timeout=60, headers={
            "Content-Type": "application/json", "X-GitHub-Event": "pull_request",
            "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature})

    def send_noop(session: requests.Session, _job) -> requests.Response:
        # Same body size so the transfer cost is the same; the route does nothing with it.
        return session.post(f"{url}/_bench/noop", data=body, timeout=60,
                            headers={"Content-Type": "application/json"})

    rng = random.Random(args.seed)
    ids = schedule(args.deliveries, rng)
    unique = list(dict.fromkeys(ids))
    clients = Clients(args.clients)
    try:
        # Warm up: connections, Flask, SQLAlchemy engine; one signed delivery stored under its own id.
        warm_id = "bench-warmup-" + uuid.uuid4().hex
        clients.run([warm_id], send_delivery)
        clients.run([None] * (2 * args.clients), send_noop)

        hook_results, noop_results = [], []
        hook_seconds = noop_seconds = 0.0
        chunk = -(-len(ids) // args.rounds)
        for start in range(0, len(ids), chunk):
            part = ids[start:start + chunk]
            results, seconds = clients.run(part, send_delivery)
            hook_results += [(delivery, *result) for delivery, result in zip(part, results)]
            hook_seconds += seconds
            results, seconds = clients.run([None] * len(part), send_noop)
            noop_results += results
            noop_seconds += seconds
        time.sleep(0.2)  # let any (unexpected) executor work show up in the checks
    finally:
        server.close()
        clients.pool.shutdown()
        service.stop()

    # --- checks -----------------------------------------------------------------------------
    problems: list[str] = []
    firsts = Counter()
    for delivery, _ms, status, answer in hook_results:
        if status == 202 and answer.get("status") == "ignored":
            firsts[delivery] += 1
        elif not (status == 200 and answer.get("status") == "duplicate"):
            problems.append(f"delivery {delivery}: unexpected answer {status} {answer}")
    for delivery in unique:
        if firsts[delivery] != 1:
            problems.append(f"delivery {delivery}: acknowledged as new {firsts[delivery]} times, expected 1")
    bad_noop = [status for _ms, status, _ in noop_results if status != 200]
    if bad_noop:
        problems.append(f"{len(bad_noop)} no-op requests failed: {Counter(bad_noop)}")

    with session_scope(db_url) as session:
        stored = dict(session.execute(
            select(Event.delivery_id, func.count()).group_by(Event.delivery_id)).all())
        statuses = Counter(s for (s,) in session.execute(select(Event.status)).all())
        runs = session.execute(select(func.count()).select_from(Run)).scalar_one()
    stored.pop(warm_id, None)
    lost = [d for d in unique if d not in stored]
    duplicated = {d: n for d, n in stored.items() if n != 1}
    extra = [d for d in stored if d not in set(unique)]
    if lost:
        problems.append(f"{len(lost)} delivery ids lost (not in the database)")
    if duplicated:
        problems.append(f"{len(duplicated)} delivery ids stored more than once")
    if extra:
        problems.append(f"{len(extra)} unexpected rows in events")
    if set(statuses) != {"ignored"}:
        problems.append(f"event statuses {dict(statuses)}, expected all 'ignored'")
    if runs or submitted:
        problems.append(f"{runs} runs created and {len(submitted)} events submitted; expected none")
    shutil.rmtree(tmp, ignore_errors=True)

    # --- report -----------------------------------------------------------------------------
    hook_ms = [ms for _d, ms, _s, _a in hook_results]
    noop_ms = [ms for ms, _s, _a in noop_results]
    print(f"event measured: pull_request 'opened' ({len(body)} byte body) for {UNWATCHED_REPO}, a repository the "
          "default trigger policy does not watch: stored as 'ignored', no run started, so the timing is the "
          "acknowledgement alone (verify HMAC + parse + decide + persist + answer)")
    print(f"server: waitress, {args.threads} threads, loopback; SQLite in a temporary directory; "
          f"{args.clients} clients with keep-alive; {args.rounds} alternating rounds")
    print(f"deliveries: {len(ids)} sent, {len(unique)} unique ids, {len(ids) - len(unique)} redeliveries")
    print()
    print(f"{'route':32} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'req/s':>8}")
    print(f"{'POST /webhook/github':32} {percentile(hook_ms, .5):8.2f} {percentile(hook_ms, .99):8.2f} "
          f"{max(hook_ms):8.2f} {len(hook_ms) / hook_seconds:8.1f}")
    print(f"{'POST /_bench/noop (same body)':32} {percentile(noop_ms, .5):8.2f} {percentile(noop_ms, .99):8.2f} "
          f"{max(noop_ms):8.2f} {len(noop_ms) / noop_seconds:8.1f}")
    print()
    print(f"ratio p50(webhook) / p50(no-op): {percentile(hook_ms, .5) / percentile(noop_ms, .5):.1f}")
    print(f"sustained: {len(ids) / hook_seconds:.1f} deliveries/s")
    print(f"database: {len(unique)} unique ids expected, {len(stored)} stored; lost {len(lost)}, "
          f"duplicated {len(duplicated)}, unexpected {len(extra)}; statuses (with the warm-up delivery) {dict(statuses)}; runs {runs}, "
          f"executor submissions {len(submitted)}")
    if problems:
        print("FAILED:")
        for problem in problems[:20]:
            print(f"  {problem}")
        return 1
    print("OK: zero lost, zero duplicated, one 202 per delivery id and 200 'duplicate' for each redelivery")
    return 0


if __name__ == "__main__":
    sys.exit(main())
