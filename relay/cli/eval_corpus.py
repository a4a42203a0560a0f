"""`relay-cli eval --corpus DIR`: the regression-injection corpus, scored per kind of change (docs/eval.md)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from relay.errors import ExitStatus, UserError

ARTIFACT = "corpus-eval.json"


def _pct(value) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def table(report: dict):
    from rich.table import Table

    summary = report["summary"]
    out = Table(title=f"Injection corpus: {summary['breaking_changes']} breaking changes "
                      f"({summary['changes_that_broke']} broke spyre, {summary['newly_failing']} newly failing tests), "
                      f"{summary['no_op_changes']} no-op changes")
    for column in ("kind", "changes", "caught", "newly failing", "tests caught", "selected", "precision", "APFDc (min)"):
        out.add_column(column, justify="left" if column == "kind" else "right")
    for row in report["kinds"]:
        apfdc = "-" if row["apfdc"] is None else f"{row['apfdc']:.3f} ({row['apfdc_min']:.3f})"
        if not row["breaking"]:
            out.add_row(f"{row['kind']} (no-op)", str(row["changes"]), "-", str(row["newly_failing"]), "-",
                        str(row["selected"]), "-", "-")
            continue
        out.add_row(row["kind"], str(row["changes"]), f"{row['changes_caught']}/{row['changes_that_broke']}",
                    str(row["newly_failing"]), f"{row['tests_caught']} ({_pct(row['test_recall'])})",
                    str(row["selected"]), _pct(row["precision"]), apfdc)
    return out


def handle_corpus(args: argparse.Namespace) -> int:
    from rich.console import Console

    from relay.config import load_settings
    from relay.demo import corpus
    from relay.demo.generate import DemoError
    from selector.eval.injection import InjectionError
    from testdefs.errors import RulesError

    dest = Path(args.corpus)
    if dest.exists() and any(dest.iterdir()):
        raise UserError(f"--corpus {dest} exists and is not empty", hint="choose a new or empty directory")
    settings = load_settings(Path(args.config) if args.config else None, {"rules": args.rules})
    rules = settings.rules or str(corpus.DEMO_RULES)
    console = Console(stderr=True)
    known = {i.name for i in corpus.demo_injections.injections()}
    unknown = sorted(set(args.only) - known)
    if unknown:
        raise UserError(f"--only {unknown[0]}: no such injected change", hint="see relay/demo/injections.yaml")
    try:
        with console.status("building the corpus") as status:
            built = corpus.build(dest, only=args.only or None)
            truths = corpus.ground_truth(built, progress=lambda m: status.update(f"running on spyre: {m}"))
            report = corpus.evaluate(built, truths, rules=rules, agent=args.agent,
                                     cache_dir=settings.resolved_cache_dir,
                                     progress=lambda m: status.update(m))
    except (DemoError, InjectionError, RulesError) as exc:
        raise UserError(str(exc).replace("\n", "; ")) from None
    report["shortfalls"] = corpus.meets_bar(report)
    text = json.dumps(report, sort_keys=True, indent=2) + "\n"
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / ARTIFACT).write_text(text)
    if args.json:
        sys.stdout.write(text)
    else:
        out_console = Console()
        out_console.print(table(report))
        for line in report["shortfalls"]:
            out_console.print(f"[red]short of the bar[/red] {line}")
    return ExitStatus.NEW_FAILURES if report["shortfalls"] else ExitStatus.OK
