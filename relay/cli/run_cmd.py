"""`relay-cli run`: select the upstream tests a change affects, run them on spyre, store and judge them."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from relay.config import DEFAULT_DASHBOARD_ADDRESS, load_settings
from relay.errors import ExitStatus, UserError
from relay.execution import EXECUTORS
from relay.runs.states import RunStatus

BUDGET = re.compile(r"^\d+(?:\.\d+)?%$")
LISTED = 20  # new failures named in the summary table


def register(subparsers) -> None:
    parser = subparsers.add_parser("run", help="select, run on spyre, store and report an upstream change",
                                   description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--from", dest="from_ref", required=True, metavar="REF", help="old upstream ref (e.g. 2.13)")
    parser.add_argument("--to", dest="to_ref", required=True, metavar="REF", help="new upstream ref (e.g. 2.14)")
    parser.add_argument("--upstream", default=None, metavar="PATH|URL", help="upstream checkout or clone URL "
                        "(default RELAY_UPSTREAM)")
    parser.add_argument("--rules", default=None, metavar="PATH", help="testdefs rules file or directory")
    parser.add_argument("--executor", choices=EXECUTORS, default=None,
                        help="local (default) or celery (needs --broker or RELAY_BROKER_URL)")
    parser.add_argument("--broker", default=None, metavar="URL", help="Redis URL for the celery executor")
    parser.add_argument("--shards", type=int, default=None, metavar="N", help="split the selection into N shards")
    parser.add_argument("--budget", default=None, metavar="PCT", help="run at most this share, e.g. 20%%")
    parser.add_argument("--reruns", type=int, default=None, metavar="N",
                        help="re-run a failing test N times in a fresh process to tell flaky from consistent "
                             "(default 1, RELAY_RERUNS)")
    parser.add_argument("--test-timeout", type=float, default=None, metavar="SECONDS",
                        help="a test running longer is killed and recorded timed_out (default 300, RELAY_TEST_TIMEOUT)")
    parser.add_argument("--torch-from", default=None, metavar="TORCH",
                        help="torch for the from side: a version (2.13 = newest 2.13 patch, or 2.13.0), a torch-*.whl "
                             "file, a wheel URL or 'installed' (default: the ref decides; RELAY_TORCH_FROM)")
    parser.add_argument("--torch-to", default=None, metavar="TORCH",
                        help="torch for the to side, same forms (RELAY_TORCH_TO)")
    parser.add_argument("--output", default=None, metavar="DIR",
                        help="artifacts directory (default <data dir>/runs/<run id>)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON on stdout")
    parser.set_defaults(handler=handle)


def settings_for(args: argparse.Namespace):
    if args.shards is not None and args.shards < 1:
        raise UserError(f"--shards must be at least 1, got {args.shards}")
    if args.budget is not None and not BUDGET.match(args.budget):
        raise UserError(f"--budget {args.budget!r} is not a percentage", hint="e.g. --budget 20%")
    if args.rules is not None and not Path(args.rules).exists():
        raise UserError(f"rules path {args.rules} does not exist", hint="pass --rules FILE_OR_DIR")
    executor = args.executor or ("celery" if args.broker else None)
    settings = load_settings(Path(args.config) if args.config else None, {
        "upstream": args.upstream, "rules": args.rules, "broker_url": args.broker, "shards": args.shards,
        "budget": args.budget, "executor": executor, "reruns": args.reruns, "test_timeout": args.test_timeout,
        "torch_from": args.torch_from, "torch_to": args.torch_to})
    if args.executor is None and settings.broker_url and settings.executor == "local" and not args.broker:
        settings = settings.model_copy(update={"executor": "celery"})  # RELAY_BROKER_URL selects celery
    if settings.executor not in EXECUTORS:
        raise UserError(f"executor {settings.executor!r} is not known", hint=f"choose one of {', '.join(EXECUTORS)}")
    if settings.executor == "celery" and not settings.broker_url:
        raise UserError("--executor celery needs a broker", hint="pass --broker redis://HOST:PORT/0 or set RELAY_BROKER_URL")
    if not settings.upstream:
        raise UserError("no upstream given", hint="pass --upstream PATH|URL or set RELAY_UPSTREAM")
    from relay.envs import parse_torch_value

    for side, value in (("from", settings.torch_from), ("to", settings.torch_to)):
        if value and not value.replace(".", "").isdigit():  # a file or URL: checked before a run is recorded
            parse_torch_value(value, field=f"--torch-{side}")
    looks_local = "://" not in settings.upstream and not settings.upstream.startswith(("github:", "git@"))
    if looks_local and not Path(settings.upstream).expanduser().exists():  # before a run is recorded
        raise UserError(f"upstream path {settings.upstream} does not exist",
                        hint="pass a git checkout, a git URL or github:OWNER/REPO")
    return settings


def handle(args: argparse.Namespace) -> int:
    from rich.console import Console

    from relay.cli.select_cmd import progress_printer
    from relay.runs.pipeline import run_change
    from selector.stages.collect import CollectionFailed

    settings = settings_for(args)
    console = Console(stderr=True)
    progress, report = progress_printer(console)
    try:
        with progress:
            outcome = run_change(settings, upstream=settings.upstream, from_ref=args.from_ref, to_ref=args.to_ref,
                                 rules=settings.rules, budget=settings.budget, shards=settings.shards,
                                 executor=settings.executor, output_dir=Path(args.output) if args.output else None,
                                 progress=report, torch_from=settings.torch_from, torch_to=settings.torch_to)
    except CollectionFailed as exc:
        raise UserError(f"verify stage: {exc}", hint="check that the spyre backend imports (relay-cli backend info)") from None
    if args.json:
        json.dump({"run_id": outcome.run_id, "status": outcome.status, "new_failures": outcome.new_failures,
                   "output_dir": str(outcome.output_dir), "summary": outcome.summary}, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    print_summary(console, outcome, settings)
    if outcome.status == RunStatus.CANCELLED:  # cancelled from the dashboard: the change was not verified
        console.print(f"[yellow]run {outcome.run_id} was cancelled[/]: {outcome.error or 'no reason given'}")
        return ExitStatus.NEW_FAILURES
    return ExitStatus.NEW_FAILURES if outcome.new_failures else ExitStatus.OK


def print_summary(console, outcome, settings) -> None:
    from rich.table import Table

    summary = outcome.summary
    counts = Table(title=f"Run {outcome.run_id}: {outcome.status}")
    counts.add_column("outcome")
    counts.add_column("tests", justify="right")
    for name, count in sorted(summary.get("outcomes", {}).items()):
        counts.add_row(name, str(count))
    for name, count in sorted(summary.get("verdicts", {}).items()):
        counts.add_row(f"[bold]{name.replace('_', ' ')}[/]", str(count))
    console.print(counts)
    for line in (summary.get("torch") or {}).values():
        if line:
            console.print(line, markup=False, highlight=False)
    for broken in summary.get("device_broken", []):
        console.print(f"[bold red]{broken['side']} side: {broken['verdict']}[/]")
        for line in broken["lines"]:
            console.print(f"  {line}", markup=False, highlight=False)
    new = outcome.new_failures
    if new:
        table = Table(title=f"New failures ({len(new)})")
        table.add_column("test", overflow="fold")
        for test_id in new[:LISTED]:
            table.add_row(test_id)
        if len(new) > LISTED:
            table.add_row(f"... and {len(new) - LISTED} more (results.jsonl)")
        console.print(table)
    for test_id in summary.get("fixed", [])[:LISTED]:
        console.print(f"[green]now passes under xfail_strict:[/] {test_id}")
    where = outcome.output_dir
    console.print(f"artifacts: {where} (testdefs-patch.yaml proposes rules for the new failures)")
    if settings.dashboard_url:
        console.print(f"dashboard: {settings.dashboard_url.rstrip('/')}/runs/{outcome.run_id}")
    else:
        host, port = DEFAULT_DASHBOARD_ADDRESS
        console.print(f"dashboard: run `relay-cli dashboard`, then open http://{host}:{port}/runs/{outcome.run_id}")
