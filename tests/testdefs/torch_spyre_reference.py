"""torch-spyre's semantics for one upstream test file, written from its documentation (RFC 1287, the
torch-spyre test framework docs, summarised in docs/testdefs.md "torch-spyre compatibility"), not
from its code. The round-trip test compares what this says with what imported testdefs rules decide.

For a generic test (class, method) with the variants upstream's decorators generate, as
(op, dtype) pairs (None where the test has no @ops / no @dtypes):

- modes are looked up by method name and the last config entry naming the method wins; a test
  the config names gets that entry's mode (default mandatory_success), others the file's
  unlisted_test_mode (default xfail);
- ops: @ops lists are cut to global.supported_ops (a name covers its variants, ``div`` covers
  ``div.floor_rounding``); edits.ops.include adds ops, edits.ops.exclude removes them;
- dtypes: (upstream's dtypes ∩ global.supported_dtypes ∩ the op's own dtypes) + edits.dtypes.include
  − edits.dtypes.exclude;
- ``skip`` deletes the variant: it is never generated.

``expected_variants`` returns {(class, method, op, dtype): mode} for the variants torch-spyre generates.
"""
from __future__ import annotations

import re

PATH_TOKEN = re.compile(r"^\$\{\w+\}/")


def _names(entries) -> list[str]:
    return [e["name"] if isinstance(e, dict) else e for e in entries or []]


def _covers(listed: str, op: str) -> bool:
    return op == listed or op.startswith(listed + ".")


def file_config(config: dict, path: str) -> dict:
    for file_cfg in config["test_suite_config"].get("files") or []:
        if PATH_TOKEN.sub("", file_cfg["path"]) == path:
            return file_cfg
    raise KeyError(path)


def expected_variants(config: dict, path: str,
                      upstream: dict[tuple[str, str], list[tuple[str | None, str | None]]]) -> dict[tuple, str]:
    suite = config["test_suite_config"]
    file_cfg = file_config(config, path)
    items = file_cfg.get("tests") or []
    global_cfg = suite.get("global") or {}
    global_dtypes = _names(global_cfg.get("supported_dtypes"))
    op_dtypes = {(op if isinstance(op, str) else op["name"]): ([] if isinstance(op, str) else _names(op.get("dtypes")))
                 for op in global_cfg.get("supported_ops") or []}
    last_for_method: dict[str, dict] = {}
    for item in items:
        for name in item["names"]:
            last_for_method[name.rpartition("::")[2]] = item
    out: dict[tuple, str] = {}
    for (cls, method), pairs in upstream.items():
        naming = [item for item in items if f"{cls}::{method}" in item["names"] or method in item["names"]]
        if naming:
            mode = last_for_method[method].get("mode") or "mandatory_success"
        else:
            mode = file_cfg.get("unlisted_test_mode") or "xfail"
        if mode == "skip":
            continue  # deleted: never generated
        edits = [item.get("edits") or {} for item in naming]
        ops_in = [n for e in edits for n in _names((e.get("ops") or {}).get("include"))]
        ops_out = [n for e in edits for n in _names((e.get("ops") or {}).get("exclude"))]
        dtypes_in = [n for e in edits for n in _names((e.get("dtypes") or {}).get("include"))]
        dtypes_out = [n for e in edits for n in _names((e.get("dtypes") or {}).get("exclude"))]
        upstream_ops = sorted({op for op, _ in pairs}, key=str)
        upstream_dtypes = sorted({dtype for _, dtype in pairs}, key=str)
        variants = set(pairs)
        variants |= {(op, dtype) for op in ops_in for dtype in upstream_dtypes}
        variants |= {(op, dtype) for dtype in dtypes_in for op in upstream_ops if None not in upstream_dtypes}
        for op, dtype in variants:
            if op is not None:
                if any(_covers(x, op) for x in ops_out):
                    continue
                if op_dtypes and not any(_covers(x, op) for x in op_dtypes) and not any(_covers(x, op) for x in ops_in):
                    continue
            if dtype is not None and dtype in dtypes_out:
                continue
            if dtype is not None and dtype not in dtypes_in:
                allowed = set(global_dtypes) if global_dtypes else None
                own = next((op_dtypes[x] for x in sorted(op_dtypes, key=len, reverse=True)
                            if op is not None and _covers(x, op) and op_dtypes[x]), None)
                if own is not None:
                    allowed = set(own) if allowed is None else allowed & set(own)
                if allowed is not None and dtype not in allowed:
                    continue
            out[(cls, method, op, dtype)] = mode
    return out
