"""`relay-cli demo init DIR [--scale N] [--force]`: write the bundled demo upstream."""
from __future__ import annotations

import argparse
from pathlib import Path

from relay.errors import ExitStatus


def register(subparsers) -> None:
    demo = subparsers.add_parser("demo", help="the bundled demo upstream")
    verbs = demo.add_subparsers(dest="demo_command", metavar="VERB", required=True)
    init = verbs.add_parser("init", help="create a PyTorch-shaped git repository with tags v2.13.0 and v2.14.0")
    init.add_argument("dir", type=Path, help="directory to create (must be new or empty)")
    init.add_argument("--scale", type=_positive, default=1,
                      help="multiply the files the change leaves alone by N (default 1)")
    init.add_argument("--force", action="store_true", help="replace an earlier demo in DIR")
    init.set_defaults(handler=run_init)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def run_init(args) -> int:
    from relay.demo import MANIFEST, init_demo

    manifest = init_demo(args.dir, scale=args.scale, force=args.force)
    selected = sum(len(v) for v in manifest["candidates"].values())
    print(f"demo upstream written to {args.dir}: v2.13.0 {manifest['from_sha'][:12]} -> "
          f"v2.14.0 {manifest['to_sha'][:12]}, {selected} changed tests, "
          f"{len(manifest['expected_regressions'])} expected regressions on spyre ({args.dir / MANIFEST})")
    print(f"next: relay-cli run --from 2.13 --to 2.14 --upstream {args.dir} --rules testdefs/rules/demo")
    return ExitStatus.OK
