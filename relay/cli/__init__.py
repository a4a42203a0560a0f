"""`relay-cli`: one entry point; each part of the project contributes its own verbs.

A verb is an entry point in the ``relay_cli.verbs`` group (pyproject.toml), named after the verb and
naming a module with ``register(subparsers)``, which adds the verb and sets
``handler=callable(args) -> int``. A module may also list ``USER_ERRORS``: exception classes that
mean the user's input is wrong. Those, relay's ``UserError`` and the selector's ``SelectorError``
become one line on stderr and exit 2; ``--debug`` shows the traceback.

So relay imports neither the dashboard nor the backend: they register themselves when installed.
Only the verb being run is imported (all of them for help), so `relay-cli run` never loads the
dashboard or the device.
"""
from __future__ import annotations

import argparse
import functools
import sys
import traceback
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

from relay.errors import ExitStatus, UserError
from selector.errors import SelectorError

VERB_GROUP = "relay_cli.verbs"
GLOBAL_OPTIONS_WITH_VALUE = ("--config",)


def verb_entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in sorted(entry_points(group=VERB_GROUP), key=lambda ep: ep.name)}


def requested_verb(argv: list[str]) -> str | None:
    """The verb in ``argv``: the first word that is neither an option nor a global option's value."""
    words = iter(argv)
    for word in words:
        if word in GLOBAL_OPTIONS_WITH_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def load_verbs(argv: list[str] | None = None) -> list[ModuleType]:
    """The verb module ``argv`` names; every verb module when it names none or an unknown one."""
    verbs = verb_entry_points()
    wanted = requested_verb(argv or [])
    return [ep.load() for ep in ([verbs[wanted]] if wanted in verbs else verbs.values())]


def build_parser(argv: list[str] | None = None, modules: list[ModuleType] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relay-cli", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    parser.add_argument("--config", default=None, help="settings file (default ./relay.yaml)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in load_verbs(argv) if modules is None else modules:
        module.register(subparsers)
    return parser


def _load_settings(config: str | None):
    from relay.config import load_settings

    return load_settings(Path(config) if config else None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    modules = load_verbs(argv)
    parser = build_parser(modules=modules)
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return ExitStatus.USAGE
    # Verbs outside relay (testdefs) read the relay's settings through this, without importing relay.
    args.load_settings = functools.partial(_load_settings, args.config)
    user_errors = (UserError, SelectorError, *(e for m in modules for e in getattr(m, "USER_ERRORS", ())))
    try:
        return int(args.handler(args))
    except user_errors as exc:
        if args.debug:
            traceback.print_exc()
        print(f"relay-cli: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_status", ExitStatus.USAGE))
    except KeyboardInterrupt:
        print("relay-cli: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
