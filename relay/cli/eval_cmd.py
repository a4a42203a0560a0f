"""`relay-cli eval`: replay the selector on a change with known outcomes and compare it with baselines."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relay.cli.select_cmd import add_source_arguments, progress_printer, settings_for
from relay.errors import ExitStatus, UserError

DEMO_MANIFEST = "demo-changeset.json"


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="replay evaluation: recall and cost of the selector vs baselines",
                                   description=__doc__.splitlines()[0].split(": ", 1)[-1])
    add_source_arguments(parser, refs_required=False)  # not with --corpus
    parser.add_argument("--corpus", default=None, metavar="DIR",
                        help="build the regression-injection corpus in DIR (new or empty) and score the selector per kind")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="with --corpus: only this injected change (repeatable)")
    parser.add_argument("--truth", default=None, metavar="PATH",
                        help=f"ground truth (default: {DEMO_MANIFEST} in the upstream directory)")
    parser.add_argument("--results-from", default=None, metavar="DIR", help="full-suite results at --from (instead of --truth)")
    parser.add_argument("--results-to", default=None, metavar="DIR", help="full-suite results at --to")
    parser.add_argument("--agent", choices=("local", "embedding", "llm"), default="local")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--budget", default=None, metavar="PCT")
    limit.add_argument("--time", dest="time_budget", default=None, metavar="DURATION")
    parser.set_defaults(handler=handle, shards=None)


def load_truth(args: argparse.Namespace, upstream: str):
    from selector.eval.truth import GroundTruth

    if args.results_from or args.results_to:
        if not (args.results_from and args.results_to):
            raise UserError("--results-from and --results-to go together", hint="pass both full-run directories")
        return GroundTruth.from_results(Path(args.results_from), Path(args.results_to))
    path = Path(args.truth) if args.truth else Path(upstream) / DEMO_MANIFEST
    if not path.is_file():
        raise UserError(f"no ground truth at {path}",
                        hint="pass --truth PATH (a demo-changeset.json) or --results-from/--results-to run directories")
    return GroundTruth.from_demo_changeset(path)


def _pct(value) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def table(report: dict):
    from rich.table import Table

    out = Table(title=f"Replay {report['from_ref']} -> {report['to_ref']}: {report['regressions']} regressions, "
                      f"{report['fixed']} fixes, full suite {report['full_suite']['tests']} tests")
    for column in ("strategy", "tests", "by count", "by duration", "test recall", "cause recall", "fixed recall", "APFDc"):
        out.add_column(column, justify="left" if column == "strategy" else "right")
    for row in report["strategies"]:
        out.add_row(row["name"], str(row["tests"]), _pct(row["fraction_by_count"]), _pct(row["fraction_by_duration"]),
                    _pct(row["test_recall"]), _pct(row["cause_recall"]), _pct(row["fixed_recall"]),
                    "-" if row["apfdc"] is None else f"{row['apfdc']:.3f}")
    return out


def _store(settings, document: dict, agent: str, console) -> None:
    """Keep the replay for the dashboard's trends; a database that cannot be reached costs only that."""
    from relay.storage.evals import store_eval

    try:
        eval_id = store_eval(settings.resolved_database_url, document, upstream=settings.upstream, agent=agent)
    except UserError as exc:
        console.print(f"[yellow]not stored for the dashboard:[/] {exc}")
        return
    console.print(f"stored as eval run {eval_id} (the dashboard's trends page charts its recall)")


def handle(args: argparse.Namespace) -> int:
    if args.corpus:
        from relay.cli.eval_corpus import handle_corpus

        return handle_corpus(args)
    if not (args.from_ref and args.to_ref):
        raise UserError("--from and --to are required", hint="pass both refs, or --corpus DIR for the injection corpus")
    from rich.console import Console

    from selector import artifacts
    from selector.eval import evaluate
    from selector.stages.collect import CollectionFailed
    from selector.upstream import UpstreamError
    from testdefs.errors import RulesError

    settings = settings_for(args)
    truth = load_truth(args, settings.upstream)
    console = Console(stderr=True)
    progress, report_progress = progress_printer(console)
    try:
        with progress:
            report, selection = evaluate(settings.upstream, args.from_ref, args.to_ref, truth, rules=settings.rules,
                                         history=args.history or None, agent=args.agent, budget=args.budget,
                                         time_budget=args.time_budget, cache_dir=settings.resolved_cache_dir,
                                         progress=report_progress)
    except CollectionFailed as exc:
        raise UserError(f"collection on spyre: {exc}") from None
    except (UpstreamError, RulesError) as exc:
        raise UserError(str(exc).replace("\n", "; ")) from None
    document = report.to_json()
    if args.output:
        out = Path(args.output)
        artifacts.write(selection, out)
        (out / "eval.json").write_text(json.dumps(document, sort_keys=True, indent=2) + "\n")
    _store(settings, document, args.agent, console)
    if args.json:
        sys.stdout.write(json.dumps(document, sort_keys=True, indent=2) + "\n")
    else:
        out = Console()
        out.print(table(document))
        for line in document["missed"]:
            out.print(f"[red]missed[/red] {line}")
        overhead = document["selector_overhead_of_saved_time"]
        out.print(f"selector time {document['selector_seconds']:.1f}s"
                      + (f" = {overhead * 100:.2f}% of the estimated test time saved" if overhead is not None else ""))
    # a missed regression is a failed check
    return ExitStatus.NEW_FAILURES if document["missed"] else ExitStatus.OK
