"""`relay-cli backend info|adapters|coverage`: what the bundled spyre simulator does with each op.

Contributed to relay-cli through the ``relay_cli.verbs`` entry point in backend/pyproject.toml; the
backend knows nothing of the relay: this module uses argparse, rich and the device's own code.
A bad SPYRE_* setting or table is a ``ConfigError``: relay-cli prints it as one line and exits 2.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

from spyre_device.errors import ConfigError

STATUSES = ("native", "fallback", "unsupported")
USER_ERRORS = (ConfigError,)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("backend", help="inspect the spyre device simulator")
    verbs = parser.add_subparsers(dest="backend_command", metavar="VERB", required=True)

    info = verbs.add_parser("info", help="device availability, simulator settings and cost-model constants")
    info.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    info.set_defaults(handler=_info)

    adapters = verbs.add_parser("adapters", help="list the op rewrites the simulator applies")
    adapters.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    adapters.set_defaults(handler=_adapters)

    coverage = verbs.add_parser("coverage", help="show the op coverage table (or how given ops resolve)")
    coverage.add_argument("--table", default=None, help="coverage YAML (default: SPYRE_COVERAGE or the bundled table)")
    coverage.add_argument("--status", choices=STATUSES, help="only ops with this status")
    coverage.add_argument("ops", nargs="*", metavar="OP", help="resolve these ops, e.g. add.Tensor or aten::pow.Tensor_Scalar")
    coverage.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    coverage.set_defaults(handler=_coverage)


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
    table = _load_table(args.table)
    if args.ops:
        names = [op if "::" in op else f"aten::{op}" for op in args.ops]
        rules = [(name, table.resolve(name)) for name in names]
    else:
        rules = [(f"aten::{name}", rule) for name, rule in sorted(table.entries.items())]
    rows = [
        {"op": name, "status": rule.status.value, "family": rule.family, "where": rule.where}
        for name, rule in rules
        if args.status is None or rule.status.value == args.status
    ]
    if args.json:
        _print_json({"table": table.name, "path": table.path, "default": table.default.status.value,
                     "counts": table.counts(), "ops": rows})
    else:
        _table(f"coverage table {table.name} ({table.path}); unlisted ops: {table.default.status.value}",
               ["op", "status", "family", "where"],
               [[r["op"], r["status"], r["family"] or "-", r["where"]] for r in rows])
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
