"""`relay-cli worker`: a Celery worker that runs shards (needs the broker and the shared database)."""
from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

from relay.config import load_settings
from relay.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser("worker", help="run a Celery worker executing test shards",
                                   description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--broker", default=None, help="Redis URL (default RELAY_BROKER_URL)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="shards run at once by this worker (default 1: the device is used by one test process)")
    parser.add_argument("--hostname", default=None, help="worker node name (default relay-<pid>@<host>)")
    parser.add_argument("--visibility-timeout", type=int, default=None, metavar="SECONDS",
                        help="redeliver a shard whose worker vanished after this long (default 3600; "
                             "must exceed the longest shard)")
    parser.add_argument("--loglevel", default="INFO")
    parser.add_argument("--pool", default="prefork", choices=["prefork", "solo", "threads"])
    parser.set_defaults(handler=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    settings = load_settings(Path(args.config) if args.config else None, {"broker_url": args.broker})
    if not settings.broker_url:
        raise UserError("no broker configured for the worker", hint="pass --broker redis://HOST:PORT/0 or set RELAY_BROKER_URL")
    if not settings.broker_url.startswith(("redis://", "rediss://", "unix://")):
        raise UserError(f"broker URL {settings.broker_url.split('@')[-1]!r} is not a Redis URL",
                        hint="expected redis://HOST:PORT/DB")
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {args.concurrency}")
    from relay.execution.celery_app import DEFAULT_VISIBILITY_TIMEOUT, configure
    from relay.storage import init_db

    init_db(settings.resolved_database_url)  # fail now, with one line, not inside the first task
    app = configure(settings.broker_url, visibility_timeout=args.visibility_timeout or DEFAULT_VISIBILITY_TIMEOUT)
    hostname = args.hostname or f"relay-{os.getpid()}@{socket.gethostname()}"
    app.worker_main(["worker", f"--loglevel={args.loglevel}", f"--concurrency={args.concurrency}",
                     f"--pool={args.pool}", f"--hostname={hostname}", "--without-gossip", "--without-mingle"])
    return 0
