"""`relay-cli envs`: the per-torch environments runs use (build ahead of a run, list, prune)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relay.cli.pruning import add_prune_flags, older_than_days, print_removed
from relay.config import load_settings
from relay.errors import ExitStatus


def register(subparsers) -> None:
    parser = subparsers.add_parser("envs", help="per-torch environments: build, list, prune",
                                   description=__doc__.splitlines()[0].split(": ", 1)[1])
    verbs = parser.add_subparsers(dest="envs_command", metavar="VERB", required=True)
    build = verbs.add_parser("build", help="make (or reuse) the environment of a torch build")
    build.add_argument("torch", metavar="TORCH", help="a version (2.14 or 2.14.1), a torch-*.whl file or a wheel URL")
    build.add_argument("--json", action="store_true", help="print the environment as JSON on stdout")
    build.set_defaults(handler=handle_build)
    listing = verbs.add_parser("list", help="environments under the cache dir, their torch, device and size")
    listing.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
    listing.set_defaults(handler=handle_list)
    prune = verbs.add_parser("prune", help="remove half-built environments, and unused ones by age or all")
    add_prune_flags(prune, "environments")
    prune.set_defaults(handler=handle_prune)


def manager(args: argparse.Namespace, progress=None):
    from relay.envs import EnvManager

    settings = load_settings(Path(args.config) if args.config else None)
    return EnvManager(settings.resolved_cache_dir, progress=progress)


def handle_build(args: argparse.Namespace) -> int:
    from rich.console import Console

    from relay.cli.select_cmd import progress_printer
    from relay.envs import parse_torch_value

    console = Console(stderr=True)
    progress, report = progress_printer(console)
    build = parse_torch_value(args.torch, field="TORCH")
    with progress:
        env = manager(args, report).ensure(build)
    if args.json:
        json.dump(env.to_dict(), sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    console.print(f"torch {env.torch_version}: {env.path or 'the installed environment'} "
                  f"({'reused' if env.reused else 'built'}); {env.device.verdict}")
    for line in env.device.lines:
        console.print(f"  {line}", markup=False, highlight=False)
    return ExitStatus.OK if env.device.ok else ExitStatus.NEW_FAILURES


def handle_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    rows = manager(args).list()
    if args.json:
        json.dump(rows, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return ExitStatus.OK
    console = Console()
    if not rows:
        console.print("no environments yet (a run with --torch-from/--torch-to, or `relay-cli envs build`, makes one)")
        return ExitStatus.OK
    table = Table(title="Environments")
    for column in ("name", "torch", "device", "size", "last used", "state"):
        table.add_column(column)
    for row in rows:
        state = "building" if row["building"] else ("ready" if row["complete"] else "incomplete (prune removes it)")
        table.add_row(row["name"], row["torch_version"] or "-", row["device"], human_bytes(row["bytes"]),
                      row["last_used"] or "-", state)
    console.print(table)
    console.print(f"total {human_bytes(sum(r['bytes'] for r in rows))} under {Path(rows[0]['path']).parent}")
    return ExitStatus.OK


def handle_prune(args: argparse.Namespace) -> int:
    print_removed(manager(args).prune(older_than_days=older_than_days(args), everything=args.all))
    return ExitStatus.OK


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"
