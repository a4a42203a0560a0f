"""What `envs prune` and `cache prune` share: the age flags, their check, and the report of what went."""
from __future__ import annotations

import argparse

from relay.errors import UserError


def add_prune_flags(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                        help=f"also remove {what} not used for DAYS days")
    parser.add_argument("--all", action="store_true", help=f"remove every {what.rstrip('s')}")


def older_than_days(args: argparse.Namespace) -> float | None:
    if args.older_than is not None and args.older_than < 0:
        raise UserError(f"--older-than must be a number of days >= 0, got {args.older_than:g}")
    return args.older_than


def print_removed(lines: list[str]) -> None:
    for line in lines:
        print(f"removed {line}")
    if not lines:
        print("nothing to prune")
