"""`relay-cli testdefs validate|explain|stale|import-torch-spyre|schema`: work with the YAML reuse rules.

Contributed to relay-cli through the ``relay_cli.verbs`` entry point; testdefs imports nothing of the
relay, so the relay's settings reach it through ``args.load_settings`` (set by relay-cli).
Exit statuses (docs/conventions.md): 0 clean, 1 a check found problems, 2 bad input (``CommandError``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import testdefs
from testdefs.errors import HintedError, Problem
from testdefs.loader import parse_document
from testdefs.torch_spyre_config import ConfigError, load_config
from testdefs.torch_spyre_import import convert_loaded, render

BUNDLED_RULES = Path(testdefs.__file__).with_name("rules") / "pytorch"
FOUND_PROBLEMS = 1


class CommandError(HintedError, ValueError):
    """Input a testdefs command cannot use; relay-cli prints it as one line and exits 2."""


USER_ERRORS = (CommandError,)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("testdefs", help="validate, explain and maintain the YAML test-reuse rules")
    verbs = parser.add_subparsers(dest="testdefs_command", metavar="VERB", required=True)

    validate = verbs.add_parser("validate", help="check rules files: every problem with file:line, then conflicts")
    validate.add_argument("paths", nargs="*", metavar="PATH", help=f"rules files or directories (default: {_default_label()})")
    validate.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    validate.set_defaults(handler=_validate)

    explain = verbs.add_parser("explain", help="which entry decides a test's mode, and why")
    explain.add_argument("test_ids", nargs="+", metavar="TEST_ID",
                         help="instantiated upstream ids, e.g. test/test_ops.py::TestCommonPRIVATEUSE1::test_add_spyre_float32")
    _rules_option(explain)
    explain.add_argument("--torch-version", default=None, help="evaluate `when` for this torch version")
    explain.add_argument("--op", default=None, help="OpInfo name the test is instantiated for (e.g. add)")
    explain.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    explain.set_defaults(handler=_explain)

    stale = verbs.add_parser("stale", help="entries that name no test of a collected upstream tree")
    stale.add_argument("--upstream", required=True, help="upstream checkout (the files the rules name are collected there)")
    _rules_option(stale)
    stale.add_argument("--ids", default=None, help="read collected ids from this file (one per line) instead of collecting")
    stale.add_argument("--torch-version", default=None, help="skip entries whose `when` excludes this version")
    stale.add_argument("--timeout", type=float, default=900, help="seconds allowed for collection (default 900)")
    stale.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    stale.set_defaults(handler=_stale)

    importer = verbs.add_parser("import-torch-spyre", help="convert a torch-spyre test_suite_config YAML")
    importer.add_argument("file", metavar="FILE", help="torch-spyre config, e.g. tests/configs/upstream_tests/test_view_ops_config.yaml")
    importer.add_argument("-o", "--output", default=None, help="write the rules here (default: stdout)")
    importer.add_argument("--json", action="store_true", help="one JSON object {yaml, report} on stdout")
    importer.add_argument("--allow-regex", action="store_true",
                          help="import names that are regular expressions (torch-spyre reads names with non-word "
                               "characters as regexes) as re: patterns instead of rejecting them")
    importer.set_defaults(handler=_import)

    bootstrap = verbs.add_parser("bootstrap", help="run an upstream test file on spyre and propose rules for what fails")
    bootstrap.add_argument("test_file", metavar="TEST_FILE", help="upstream test file, relative to --upstream "
                           "(e.g. test/test_view_ops.py)")
    bootstrap.add_argument("--upstream", required=True, help="upstream checkout the file is run in")
    bootstrap.add_argument("-o", "--output", default=None, help="write the rules here (default: stdout)")
    bootstrap.add_argument("--rules", action="append", default=[], metavar="PATH",
                           help="rules applied during the run, e.g. the global section: variants they exclude "
                                "are not run and get no entry (repeatable)")
    bootstrap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per pytest run (default 3600)")
    bootstrap.add_argument("--json", action="store_true", help="one JSON object {yaml, results} on stdout")
    bootstrap.set_defaults(handler=_bootstrap)

    schema = verbs.add_parser("schema", help="print the JSON Schema of a rules file (for editors)")
    schema.add_argument("-o", "--output", default=None, help="write it here instead of stdout")
    schema.set_defaults(handler=_schema)


def _default_label() -> str:
    return "settings `rules`, else the bundled testdefs/rules/pytorch"


def _rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", action="append", default=None, metavar="PATH",
                        help=f"rules file or directory; repeatable (default: {_default_label()})")


def _rule_paths(args: argparse.Namespace, given: list[str] | None) -> list[str]:
    if given:
        return list(given)
    return [str(args.load_settings().rules or BUNDLED_RULES)]


def _load(paths: list[str]) -> testdefs.RuleSet:
    """Load rules; a bad file prints every problem on stderr, then becomes one CommandError line."""
    try:
        return testdefs.load_rules([Path(p) for p in paths])
    except testdefs.RulesError as exc:
        raise _problems_error(exc.problems, f"the rules ({', '.join(paths)})") from None


def _problems_error(problems: list[Problem], where: str) -> CommandError:
    """One problem: that line is the error. Several: all but the last on stderr, then a summary."""
    if len(problems) == 1:
        return CommandError(str(problems[0]))
    for problem in problems:
        print(problem, file=sys.stderr)
    return CommandError(f"{len(problems)} problems in {where}", hint="fix each file:line above")


def _print_json(payload) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True))


def _validate(args: argparse.Namespace) -> int:
    paths = _rule_paths(args, args.paths)
    rules = _load(paths)
    conflicts = rules.conflicts()
    bad = [c for c in conflicts if c.kind == "conflict"]
    entries = rules.entries()
    if args.json:
        _print_json({"rules": rules.sources, "sections": len(rules.sections), "entries": len(entries),
                     "conflicts": [_conflict_dict(c) for c in conflicts]})
    else:
        for conflict in conflicts:
            print(conflict)
        print(f"{len(rules.sources)} rules file(s), {len(rules.sections)} upstream file section(s), "
              f"{len(entries)} entries: {len(bad)} conflict(s), {len(conflicts) - len(bad)} duplicate(s)")
    return FOUND_PROBLEMS if bad else 0


def _conflict_dict(conflict: testdefs.Conflict) -> dict:
    return {"kind": conflict.kind, "subject": conflict.subject, "refs": list(conflict.refs),
            "modes": list(conflict.modes)}


def _explain(args: argparse.Namespace) -> int:
    rules = _load(_rule_paths(args, args.rules))
    try:
        decisions = [rules.decide(test_id, torch_version=args.torch_version, op=args.op) for test_id in args.test_ids]
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    matches = [rules.matching_entries(test_id, torch_version=args.torch_version, op=args.op)
               for test_id in args.test_ids]
    if args.json:
        _print_json([{**d.to_dict(), "entries": [{"ref": m.ref, "mode": m.mode, "pattern": m.pattern,
                                                   "applies": m.applies, "why_not": m.why_not} for m in found]}
                     for d, found in zip(decisions, matches)])
        return 0
    for decision, found in zip(decisions, matches):
        print(decision.test_id)
        print(f"  normalised: {decision.normalised}")
        print(f"  mode:       {decision.mode}")
        if decision.entry:
            print(f"  decided by: {decision.entry}" + (f" (match {decision.pattern})" if decision.pattern else ""))
        else:
            print("  decided by: " + (f"unlisted_test_mode of {decision.rules_file}" if decision.rules_file
                                       else "no rules file covers this test file"))
        if decision.reason:
            reason = decision.reason
            print(f"  reason:     {reason.category}: {reason.text}")
            for label, value in (("issue", reason.issue), ("since", reason.since)):
                if value:
                    print(f"  {label}:{' ' * (11 - len(label))}{value}")
        if decision.op:
            print(f"  op:         {decision.op}")
        if decision.tolerance:
            t = decision.tolerance
            print(f"  tolerance:  atol={t.atol} rtol={t.rtol} ({t.source})")
        if decision.tags:
            print(f"  tags:       {', '.join(decision.tags)}")
        for match in found:
            if match.ref == decision.entry:
                continue
            why = "applies, but is less specific or later" if match.applies else f"does not apply: {match.why_not}"
            print(f"  also names: {match.ref} ({match.mode}, match {match.pattern}): {why}")
    return 0


def _stale(args: argparse.Namespace) -> int:
    from testdefs.collect import collect

    paths = _rule_paths(args, args.rules)
    rules = _load(paths)
    upstream = Path(args.upstream)
    if not upstream.is_dir():
        raise CommandError(f"--upstream {upstream}: not a directory", hint="give an upstream PyTorch checkout")
    errors: list[str] = []
    if args.ids:
        try:
            lines = Path(args.ids).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CommandError(f"--ids {args.ids}: cannot read: {exc.strerror}") from None
        collected: list[tuple[str, str | None]] = [(line.strip(), None) for line in lines if line.strip()]
    else:
        from rich.console import Console

        with Console(stderr=True).status(f"collecting the upstream files the rules name in {upstream} ..."):
            collection = collect(rules, paths, upstream, timeout=args.timeout)
        collected, errors = collection.ids, collection.errors
        if collection.exit_status not in (0, 5) and not collected:
            raise CommandError(f"collecting in {upstream} failed (exit {collection.exit_status}): "
                            f"{collection.output_tail.strip().splitlines()[-1] if collection.output_tail.strip() else ''}")
    stale = rules.stale(collected, torch_version=args.torch_version)
    unchecked = [s for s in stale if any(s.path and _same_file(s.path, e) for e in errors)]
    stale = [s for s in stale if s not in unchecked]
    if args.json:
        _print_json({"collected": len(collected), "collection_errors": errors,
                     "stale": [{"ref": s.ref, "kind": s.kind, "subject": s.subject, "message": s.message}
                               for s in stale]})
    else:
        for entry in stale:
            print(entry)
        for error in errors:
            print(f"not checked: {error} could not be collected", file=sys.stderr)
        print(f"{len(collected)} collected test(s): {len(stale)} stale entr{'y' if len(stale) == 1 else 'ies'}")
    return FOUND_PROBLEMS if stale else 0


def _same_file(rule_path: str, errored: str) -> bool:
    from testdefs.matching import path_covers

    return path_covers(rule_path, errored.split("::", 1)[0])


def _import(args: argparse.Namespace) -> int:
    source = Path(args.file)
    try:
        loaded = load_config(source, str(source), allow_regex=args.allow_regex)
        document, report = convert_loaded(loaded)
    except ConfigError as exc:
        raise _problems_error(exc.problems, str(source)) from None
    rules_yaml = render(str(source), document)
    return _emit_rules(args, rules_yaml, {"report": report.to_dict()}, report.lines())


def _emit_rules(args: argparse.Namespace, rules_yaml: str, extra: dict, summary: list[str]) -> int:
    """Write generated rules (checked valid first) to -o, stdout, or as --json; the summary to stderr."""
    _, _, problems = parse_document(rules_yaml, "<generated>")
    if problems:  # generators must only ever write valid rules
        raise CommandError(f"the generated rules are not valid: {problems[0]}",
                           hint="please report this with the input")
    if args.json:
        _print_json({"yaml": rules_yaml, **extra})
        return 0
    if args.output:
        Path(args.output).write_text(rules_yaml, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(rules_yaml)
    for line in summary:
        print(line, file=sys.stderr)
    return 0


def _bootstrap(args: argparse.Namespace) -> int:
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    from testdefs.bootstrap import render as render_bootstrap
    from testdefs.bootstrap import rules_for, run_file

    upstream = Path(args.upstream)
    if not (upstream / args.test_file).is_file():
        raise CommandError(f"{upstream / args.test_file}: no such test file (give it relative to --upstream)")
    try:
        torch_version = Version(version("torch")).public  # 2.13.0+cpu -> 2.13.0
    except PackageNotFoundError:
        raise CommandError("torch is not installed in this environment; bootstrap runs tests on the device") from None
    if args.rules:
        _load(args.rules)  # bad rules: one clear error now, not a failed run later
    run = run_file(upstream, args.test_file, rules=[Path(p) for p in args.rules], timeout=args.timeout)
    if not run.results:
        raise CommandError(f"no test of {args.test_file} ran (pytest exit statuses {run.exit_statuses}); "
                           f"try `pytest --collect-only {args.test_file}` in {upstream}")
    text = render_bootstrap(rules_for(args.test_file, run.results, torch_version=torch_version), args.test_file)
    failed = sum(r.outcome in ("failed", "error", "crashed") for r in run.results)
    summary = f"{len(run.results)} test(s) run, {failed} failed ({len(run.crashed)} took the process down)"
    return _emit_rules(args, text, {"results": [vars(r) for r in run.results], "crashed": run.crashed}, [summary])


def _schema(args: argparse.Namespace) -> int:
    text = json.dumps(testdefs.json_schema(), indent=2, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
