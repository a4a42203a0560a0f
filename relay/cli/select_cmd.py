"""`relay-cli select`: which upstream tests a change can affect on spyre, and why."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relay.cli.output_dir import writable_output
from relay.config import load_settings
from relay.errors import ExitStatus, UserError
from selector.stages import STAGE_ORDER


def add_source_arguments(parser: argparse.ArgumentParser, refs_required: bool = True) -> None:
    """--from/--to/--upstream/--rules/--history, shared with `relay-cli eval`."""
    parser.add_argument("--from", dest="from_ref", required=refs_required, metavar="REF", help="old upstream ref (e.g. 2.13)")
    parser.add_argument("--to", dest="to_ref", required=refs_required, metavar="REF", help="new upstream ref (e.g. 2.14)")
    parser.add_argument("--upstream", default=None, metavar="PATH|URL",
                        help="upstream checkout or clone URL (default: RELAY_UPSTREAM)")
    parser.add_argument("--rules", default=None, metavar="PATH", help="testdefs rules file or directory")
    parser.add_argument("--history", action="append", default=[], metavar="PATH",
                        help="results.jsonl (or run directory) of an earlier spyre run; repeatable")
    parser.add_argument("--output", default=None, metavar="DIR", help="write the artifacts to this directory")
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def register(subparsers) -> None:
    parser = subparsers.add_parser("select", help="select the upstream tests a change can affect on spyre",
                                   description=__doc__.splitlines()[0].split(": ", 1)[-1])
    add_source_arguments(parser)
    parser.add_argument("--stage", choices=STAGE_ORDER, default="verify", help="stop after this stage (default verify)")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--budget", default=None, metavar="PCT", help="run at most this share, e.g. 25%%")
    limit.add_argument("--time", dest="time_budget", default=None, metavar="DURATION", help="run at most this long, e.g. 20m")
    parser.add_argument("--agent", choices=("local", "embedding", "llm"), default="local", help="stage-3 provider")
    parser.add_argument("--allow-agent-drop", action="store_true",
                        help="let the agent drop tests it judges unaffected (never must-run tests)")
    parser.add_argument("--shards", type=int, default=None, metavar="N", help="split the selection into N shards")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="selected tests to list (default 15; every test with --stage diff; 0 = all)")
    parser.set_defaults(handler=handle)


def settings_for(args: argparse.Namespace):
    overrides = {"upstream": args.upstream, "rules": args.rules}
    if getattr(args, "shards", None) is not None:
        overrides["shards"] = args.shards
    settings = load_settings(Path(args.config) if args.config else None, overrides)
    if not settings.upstream:
        raise UserError("no upstream given", hint="pass --upstream PATH|URL or set RELAY_UPSTREAM")
    return settings


def progress_printer(console):
    """A rich progress display on stderr and the callback the selector reports to."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.fields[stage]:<7}"), TextColumn("{task.description}"),
                        BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True,
                        disable=not console.is_terminal)  # logs and pipes get the summary only
    tasks: dict[str, int] = {}

    def report(stage: str, message: str, done: int | None, total: int | None) -> None:
        if stage not in tasks:
            for task in progress.tasks:  # a new stage means the earlier ones are over: stop their clocks
                if not task.finished:
                    finished = max(int(task.completed), int(task.total or 0), 1)
                    progress.update(task.id, completed=finished, total=finished)
            tasks[stage] = progress.add_task(message, stage=stage, total=None)
        progress.update(tasks[stage], description=message, completed=done or 0, total=total)

    return progress, report


def selected_fraction(funnel: dict[str, int]) -> str | None:
    """How much of the upstream suite the selection runs, in test functions (the unit of
    ``upstream total``) and, after stage 4, in spyre tests of the files it collected."""
    total, functions = funnel.get("upstream_total"), funnel.get("selected_functions")
    if not total or functions is None:
        return None
    text = f"selected {functions:,} of {total:,} upstream test functions ({functions / total:.1%})"
    if funnel.get("collected"):
        text += f"; {funnel['selected']:,} of {funnel['collected']:,} spyre tests collected ({funnel['selected'] / funnel['collected']:.1%})"
    return text


def summary_tables(selection, limit: int = 15):
    from rich.table import Table

    funnel = Table(title=f"Selection {selection.from_ref} -> {selection.to_ref}")
    funnel.add_column("stage")
    funnel.add_column("tests", justify="right")
    for key, value in selection.funnel.items():
        funnel.add_row(key.replace("_", " "), str(value))
    limit = limit or len(selection.tests)
    chosen = Table(title=f"First {min(limit, len(selection.tests))} of {len(selection.tests)} selected (riskiest first)")
    for column in ("#", "test", "shard", "score", "reason"):
        chosen.add_column(column, overflow="fold")
    by_id = {d.test_id: d for d in selection.decisions}
    for index, test_id in enumerate(selection.tests[:limit], start=1):
        decision = by_id[test_id]
        chosen.add_row(str(index), test_id, str(decision.shard), f"{decision.score or 0:.2f}", decision.reason[:240])
    return funnel, chosen


def run_selection(args: argparse.Namespace, settings, console, stages):
    from selector.select import select
    from selector.stages.collect import CollectionFailed
    from selector.upstream import UpstreamError
    from testdefs.errors import RulesError

    progress, report = progress_printer(console)
    try:
        with progress:
            return select(settings.upstream, args.from_ref, args.to_ref, rules=settings.rules, agent=args.agent,
                          budget=getattr(args, "budget", None), time_budget=getattr(args, "time_budget", None),
                          shards=settings.shards, history=args.history or None, stages=stages, progress=report,
                          allow_agent_drop=getattr(args, "allow_agent_drop", False),
                          agent_options={"cache_dir": settings.resolved_cache_dir} if args.agent == "llm" else None,
                          cache_dir=settings.resolved_cache_dir)
    except CollectionFailed as exc:
        raise UserError(f"verify stage: {exc}", hint="check that the spyre backend imports (relay-cli backend info)") from None
    except UpstreamError as exc:
        raise UserError(str(exc)) from None
    except RulesError as exc:
        raise UserError("; ".join(str(p) for p in exc.problems)) from None


def handle(args: argparse.Namespace) -> int:
    from rich.console import Console

    from selector import artifacts

    settings = settings_for(args)
    output = writable_output(args.output)
    console = Console(stderr=True)
    stages = STAGE_ORDER[: STAGE_ORDER.index(args.stage) + 1]
    selection = run_selection(args, settings, console, stages)
    if output:
        artifacts.write(selection, output)
    if args.json:
        document = artifacts.selection_document(selection) | {
            "funnel": selection.funnel, "explanations": artifacts.explanations_document(selection)["tests"]}
        sys.stdout.write(json.dumps(document, sort_keys=True, indent=2) + "\n")
    else:
        out = Console()  # the summary is the command's output; progress stays on stderr
        limit = args.limit if args.limit is not None else (0 if args.stage == "diff" else 15)
        funnel, chosen = summary_tables(selection, limit)
        out.print(funnel)
        fraction = selected_fraction(selection.funnel)
        if fraction:
            out.print(fraction)
        out.print(chosen)
        if args.output:
            out.print(f"artifacts written to {args.output}")
    return ExitStatus.OK
