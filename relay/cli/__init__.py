"""`relay-cli`: one entry point, one module per verb group.

Each module in COMMAND_MODULES exposes ``register(subparsers)``, which adds its verb(s)
and sets ``handler=callable(args) -> int`` on the parser. Errors a user can fix are
``UserError`` (or the selector library's ``SelectorError``): one line on stderr and exit 2; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from relay.errors import ExitStatus, UserError
from selector.errors import SelectorError

COMMAND_MODULES = [
    "relay.cli.backend_cmd",
    "relay.cli.testdefs_cmd",
    "relay.cli.demo_cmd",
    "relay.cli.select_cmd",
    "relay.cli.eval_cmd",
    "relay.cli.run_cmd",
    "relay.cli.envs_cmd",
    "relay.cli.worker_cmd",
    "relay.cli.serve_cmd",
    "relay.cli.dashboard_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relay-cli", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    parser.add_argument("--config", default=None, help="settings file (default ./relay.yaml)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # verb group not built yet
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return ExitStatus.USAGE
    try:
        return int(args.handler(args))
    except (UserError, SelectorError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"relay-cli: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_status", ExitStatus.USAGE))
    except KeyboardInterrupt:
        print("relay-cli: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
