"""`relay-cli backend info|adapters|coverage`: what the bundled spyre simulator does with each op.

Contributed to relay-cli through the ``relay_cli.verbs`` entry point in backend/pyproject.toml; the
backend knows nothing of the relay: this module uses argparse, rich and the device's own code.
A bad SPYRE_* setting or table is a ``ConfigError``: relay-cli prints it as one line and exits 2.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
from typing import Any

from spyre_device.errors import ConfigError

STATUSES = ("native", "fallback", "unsupported")
LISTED_AS = STATUSES + ("composite",)
USER_ERRORS = (ConfigError,)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("backend", help="inspect the spyre device simulator")
    verbs = parser.add_subparsers(dest="backend_command", metavar="VERB", required=True)

    _verb(verbs, "info", _info, "device availability, simulator settings and cost-model constants")
    _verb(verbs, "adapters", _adapters, "list the op rewrites the simulator applies")
    coverage = _verb(verbs, "coverage", _coverage, "show the op coverage table (or how given ops resolve)")
    coverage.add_argument("--table", default=None, help="coverage YAML (default: SPYRE_COVERAGE or the bundled table)")
    coverage.add_argument("--status", choices=LISTED_AS, help="only ops with this status")
    coverage.add_argument("ops", nargs="*", metavar="OP", help="resolve these ops, e.g. add.Tensor or aten::pow.Tensor_Scalar")
    coverage.add_argument("--verify", action="store_true",
                          help="sweep op_db on the device and report every disagreement with the table (exit 1 if any)")
    coverage.add_argument("--max-samples", type=int, default=None, metavar="N",
                          help="with --verify: samples per OpInfo and dtype (default 1)")
    coverage.add_argument("--dtypes", default=None, metavar="LIST",
                          help="with --verify: comma-separated dtypes (default float32,bfloat16,int32)")


def _verb(verbs: argparse._SubParsersAction, name: str, handler, help: str) -> argparse.ArgumentParser:
    """A backend verb: every one prints a table, or JSON with --json."""
    parser = verbs.add_parser(name, help=help)
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    parser.set_defaults(handler=handler)
    return parser


def _sim():
    """The simulator's pure modules, imported when a verb runs (relay-cli help does not need them)."""
    from spyre_device.sim import adapters, constants, coverage, settings, yaml_files

    return adapters, constants, coverage, settings, yaml_files


def _print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True))


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*[str(cell) for cell in row])
    Console().print(table)


def _load_table(path: str | None):
    _, _, coverage, _, yaml_files = _sim()
    try:
        chosen = path or os.environ.get("SPYRE_COVERAGE") or coverage.DEFAULT_COVERAGE
        return coverage.load_coverage(chosen)
    except yaml_files.SimConfigError as exc:
        raise ConfigError(f"{exc} (see docs/simulator.md for the table format)") from None


def _adapters(args: argparse.Namespace) -> int:
    adapters, *_ = _sim()
    described = [a.describe() for a in adapters.ADAPTERS]
    if args.json:
        _print_json(described)
    else:
        _table("spyre adapters", ["name", "replaces", "rewrite"],
               [[a["name"], a["op"], a["description"]] for a in described])
    return 0


def _coverage(args: argparse.Namespace) -> int:
    if args.verify:
        return _verify(args)
    table = _load_table(args.table)
    def row(name: str, rule) -> dict[str, Any]:
        composite = next((table.composite[k] for k in coverage_lookup(name) if k in table.composite), None)
        if composite is not None:  # decomposed before reaching the card; its parts follow their entries
            return {"op": name, "status": "composite", "family": None, "where": composite,
                    "numerics": "those of the ops it becomes"}
        return {"op": name, "status": rule.status.value, "family": rule.family, "where": rule.where,
                "numerics": numerics(name)}

    def numerics(name: str) -> str:
        """The numeric policy that may make this op differ from the CPU (docs/simulator.md)."""
        if any(k in precision.REDUCED_PRECISION_KERNELS for k in coverage_lookup(name)):
            return "reduced_precision_matmul (fp32 inputs; SPYRE_REDUCED_PRECISION)"
        return "cpu"

    precision = importlib.import_module("spyre_device.sim.precision")
    coverage_lookup = _sim()[2].lookup_names
    if args.ops:
        names = [op if "::" in op else f"aten::{op}" for op in args.ops]
        found = [row(name, table.resolve(name)) for name in names]
    else:
        found = [row(f"aten::{name}", rule) for name, rule in sorted(table.entries.items())]
        found += [row(f"aten::{name}", table.default) for name in sorted(table.composite)]
    rows = [r for r in found if args.status is None or r["status"] == args.status]
    if args.json:
        counts = {**table.counts(), "composite": len(table.composite)}
        _print_json({"table": table.name, "path": table.path, "default": table.default.status.value,
                     "counts": counts, "ops": rows})
    else:
        _table(f"coverage table {table.name} ({table.path}); unlisted ops: {table.default.status.value}",
               ["op", "status", "family", "where", "numerics"],
               [[r["op"], r["status"], r["family"] or "-", r["where"], r["numerics"]] for r in rows])
    return 0


def _device_state() -> dict[str, Any]:
    import torch

    spyre = getattr(torch, "spyre", None)
    if spyre is None:
        return {"available": False, "reason": "torch.spyre is not registered (backend not installed or autoload off)"}
    state: dict[str, Any] = {"available": bool(spyre.is_available()), "device_count": spyre.device_count()}
    sim = getattr(spyre, "sim", None)
    try:
        state["simulator_installed"] = sim is not None and sim.simulator() is not None
    except RuntimeError:  # SPYRE_SIM=0
        state["simulator_installed"] = False
    return state


def _info(args: argparse.Namespace) -> int:
    _, constants, _, settings, _ = _sim()
    current = settings.settings_from_env()  # a bad SPYRE_* setting: ConfigError, one line
    consts = constants.load_constants(current.constants)
    table = _load_table(None)
    payload = {
        "device": _device_state(),
        "settings": {
            "enabled": current.enabled,
            "coverage": str(current.coverage),
            "constants": str(current.constants),
            "int64": current.int64,
            "reduced_precision": current.reduced_precision,
            "adapters": current.adapters,
            "warn_fallback": table.warn_on_fallback if current.warn_fallback is None else current.warn_fallback,
            "unsupported_dtypes": list(current.unsupported_dtypes),
        },
        "coverage": {"name": table.name, "default": table.default.status.value, "counts": table.counts()},
        "constants": {
            field: getattr(consts, field) for field in consts.__dataclass_fields__ if field != "path"
        },
    }
    if args.json:
        _print_json(payload)
        return 0
    _table("spyre device", ["key", "value"], [[k, v] for k, v in payload["device"].items()])
    _table("simulator settings (SPYRE_* environment)", ["setting", "value"],
           [[k, v] for k, v in payload["settings"].items()])
    counts = payload["coverage"]["counts"]
    _table(f"coverage table {table.name}", ["status", "ops listed"],
           [[s, counts[s]] for s in STATUSES] + [["unlisted ops", payload["coverage"]["default"]]])
    _table(f"cost-model constants ({current.constants})", ["constant", "value"],
           [[k, v] for k, v in payload["constants"].items()])
    return 0


def _verify(args: argparse.Namespace) -> int:
    """Sweep op_db on spyre (OpInfos named by OP, or all) and compare with the table in force."""
    import torch

    if getattr(torch, "spyre", None) is None or not hasattr(torch.spyre, "sim"):
        raise ConfigError("the spyre device is not loaded (install the backend: make setup)")
    try:
        torch.spyre.sim.simulator()
    except RuntimeError as exc:
        raise ConfigError(f"{exc} (unset SPYRE_SIM=0 to verify the coverage table)") from None
    from torch.testing._internal.common_methods_invocations import op_db

    from spyre_device.sim import verify

    previous = torch.spyre.sim.coverage_table()
    if args.table:
        torch.spyre.sim.use_coverage(_load_table(args.table))
    try:
        return _verify_with_table(args, verify, op_db)
    finally:
        torch.spyre.sim.use_coverage(previous)


def _verify_with_table(args: argparse.Namespace, verify, op_db) -> int:
    import torch

    dtypes = tuple(d.strip() for d in (args.dtypes or ",".join(verify.DEFAULT_DTYPES)).split(",") if d.strip())
    bad = [d for d in dtypes if not isinstance(getattr(torch, d, None), torch.dtype)]
    if bad:
        raise ConfigError(f"--dtypes: {bad[0]!r} is not a torch dtype (e.g. --dtypes float32,bfloat16)")
    max_samples = verify.DEFAULT_MAX_SAMPLES if args.max_samples is None else args.max_samples
    if max_samples < 1:
        raise ConfigError("--max-samples must be at least 1")
    opinfos = [op for op in op_db if not args.ops or op.name in args.ops]
    if args.ops and not opinfos:
        raise ConfigError(f"no OpInfo in op_db is named {', '.join(args.ops)} (e.g. abs, linalg.det, nn.functional.gelu)")
    results = _with_progress(lambda progress: verify.sweep(opinfos, dtypes, max_samples, progress),
                             quiet=args.json, total=len(opinfos))
    found = verify.disagreements(results, torch.spyre.sim.coverage_table())
    summary = verify.summary(results)
    if args.json:
        _print_json({"summary": summary, "disagreements": [d.to_json() for d in found],
                     "pairs": [r.to_json() for r in results]})
    else:
        _table(f"op_db sweep: {summary['pairs']} op/dtype pairs, {summary['samples']} samples",
               ["outcome", "pairs"], [[k, v] for k, v in summary["outcomes"].items()])
        if found:
            _table("disagreements between the coverage table and the sweep",
                   ["op", "kind", "table says", "observed", "OpInfos"],
                   [[d.op, d.kind, d.table_says, d.observed, ", ".join(d.opinfos)] for d in found])
        else:
            print("no disagreements: the table describes what runs")
    return 1 if found else 0  # 1: the check ran and found disagreements


def _with_progress(run, quiet: bool, total: int):
    if quiet:
        return run(None)
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("sweeping op_db on spyre", total=total)
        return run(lambda done, _total: bar.update(task, completed=done))
