"""`relay-cli serve`: the webhook relay (receiver, background runs, sweeper) on a production WSGI server."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from relay.config import load_settings
from relay.errors import UserError
from relay.redaction import install_log_filter


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="receive GitHub/CRCR webhooks and run the changes they name",
                                   description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument("--policy", default=None, metavar="FILE",
                        help="trigger policy YAML (default RELAY_TRIGGER_POLICY, else built-in defaults)")
    parser.add_argument("--threads", type=int, default=8, help="request threads (default 8)")
    parser.add_argument("--sweep-interval", type=float, default=None, metavar="SECONDS",
                        help="how often the sweeper retries reports and takes over work of relays that stopped "
                             "(default: a quarter of RELAY_TAKEOVER_SECONDS, i.e. 30; 0: never)")
    parser.set_defaults(handler=serve)


def serve(args: argparse.Namespace) -> int:
    try:
        import waitress
    except ImportError:
        raise UserError("relay-cli serve needs the waitress WSGI server",
                        hint="install it: pip install waitress") from None
    from relay.intake.policy import load_policy
    from relay.intake.service import build_service

    if not 0 < args.port < 65536:
        raise UserError(f"--port must be between 1 and 65535, got {args.port}")
    if args.threads < 1:
        raise UserError(f"--threads must be at least 1, got {args.threads}")
    settings = load_settings(Path(args.config) if args.config else None)
    policy = load_policy(Path(args.policy) if args.policy else settings.trigger_policy)
    service = build_service(settings, policy)
    service.start_sweeping(args.sweep_interval)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_filter()
    logging.getLogger("relay").info(
        "webhook relay on http://%s:%d/webhook/github, watching %s", args.host, args.port,
        ", ".join(policy.repositories))
    try:
        waitress.serve(service.app, host=args.host, port=args.port, threads=args.threads, ident="spyre-relay")
    finally:
        service.stop()
    return 0
