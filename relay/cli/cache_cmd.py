"""`relay-cli cache`: what the selector keeps under the cache dir (analyses, diffs, collections, checkouts)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relay.cli.envs_cmd import human_bytes
from relay.cli.pruning import add_prune_flags, older_than_days, print_removed
from relay.config import load_settings
from relay.errors import ExitStatus


def register(subparsers) -> None:
    parser = subparsers.add_parser("cache", help="the selector's cache: list, prune",
                                   description=__doc__.splitlines()[0].split(": ", 1)[1])
    verbs = parser.add_subparsers(dest="cache_command", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="each cache entry, its size and last use")
    listing.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
    listing.set_defaults(handler=handle_list)
    prune = verbs.add_parser("prune", help="remove entries of other code versions, and unused ones by age or all")
    add_prune_flags(prune, "entries")
    prune.set_defaults(handler=handle_prune)


def cache_dir(args: argparse.Namespace) -> Path:
    return load_settings(Path(args.config) if args.config else None).resolved_cache_dir


def handle_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from selector.cache_dirs import entries

    root = cache_dir(args)
    found = entries(root)
    if args.json:
        json.dump([entry.to_dict() for entry in found], sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return ExitStatus.OK
    console = Console()
    if not found:
        console.print(f"nothing cached under {root} yet")
        return ExitStatus.OK
    table = Table(title=f"Cache under {root}")
    for column in ("kind", "entry", "size", "last used", "state"):
        table.add_column(column)
    for entry in found:
        state = "other code version (prune removes it)" if entry.obsolete else "current"
        table.add_row(entry.kind, entry.name, human_bytes(entry.bytes),
                      entry.last_used.isoformat(timespec="seconds"), state)
    console.print(table)
    console.print(f"total {human_bytes(sum(entry.bytes for entry in found))}")
    return ExitStatus.OK


def handle_prune(args: argparse.Namespace) -> int:
    from selector.cache_dirs import prune

    removed = prune(cache_dir(args), older_than_days=older_than_days(args), everything=args.all)
    print_removed([f"{entry.kind}/{entry.name} ({human_bytes(entry.bytes)})" for entry in removed])
    return ExitStatus.OK
