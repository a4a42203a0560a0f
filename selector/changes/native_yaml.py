"""native_functions.yaml and derivatives.yaml: which ops an edit touches."""
from __future__ import annotations

import json
import re

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: native_functions.yaml is 15k lines

_NAME = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*\(")


def op_entries(text: str | None, key: str) -> tuple[dict[str, tuple[str, int]], str | None]:
    """overload name -> (canonical dump, line) for every entry; plus a parse error, if any."""
    if text is None:
        return {}, None
    try:
        data = yaml.load(text, Loader=_LOADER) or []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return {}, f"line {mark.line + 1}: {getattr(exc, 'problem', exc)}" if mark else str(exc)
    # both files are one top-level block sequence: item i starts at the i-th "- " in column 0
    lines = [number for number, line in enumerate(text.splitlines(), 1) if line.startswith("- ")]
    out: dict[str, tuple[str, int]] = {}
    for index, entry in enumerate(data if isinstance(data, list) else []):
        if not isinstance(entry, dict) or not isinstance(entry.get(key), str):
            continue
        found = _NAME.match(entry[key])
        if found:
            line = lines[index] if index < len(lines) else 0
            out[found.group(1)] = (json.dumps(entry, sort_keys=True, default=str), line)
    return out, None


def changed_ops(old: tuple[dict, str | None], new: tuple[dict, str | None]) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """{base op name: (how, line)} for added/removed/modified entries, and parse errors.

    ``old`` and ``new`` are ``op_entries`` of the two sides (computed once per blob and cached).
    """
    (before, err_a), (after, err_b) = old, new
    changed: dict[str, tuple[str, int]] = {}
    for overload in sorted(set(before) | set(after)):
        old_dump, new_dump = before.get(overload, (None,))[0], after.get(overload, (None,))[0]
        if old_dump == new_dump or old_dump and new_dump and _for_spyre(old_dump) == _for_spyre(new_dump):
            continue
        how = "added" if overload not in before else "removed" if overload not in after else "modified"
        line = (after.get(overload) or before.get(overload))[1]
        changed.setdefault(base_op(overload), (f"{overload} {how}", line))
    return changed, [e for e in (err_a, err_b) if e]


def base_op(overload: str) -> str:
    """``add.Tensor`` -> ``add``; ``add_.Tensor`` -> ``add``; ``_foo`` stays ``_foo``."""
    name = overload.split(".", 1)[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") and len(name) > 1 else name


# Dispatch keys of other devices' kernels: an edit that only touches them cannot change what spyre runs.
OTHER_DEVICE_KEYS = re.compile(r"CUDA|HIP|MPS|XPU|MkldnnCPU|Vulkan|Metal|IPU|MTIA|HPU|Lazy|XLA")


def _for_spyre(dump: str) -> str:
    """An entry without its other devices' dispatch keys (``CPU, CUDA: foo`` keeps ``CPU: foo``)."""
    entry = json.loads(dump)
    dispatch = entry.get("dispatch")
    if isinstance(dispatch, dict):
        kept = {}
        for keys, kernel in dispatch.items():
            mine = [k.strip() for k in str(keys).split(",") if not OTHER_DEVICE_KEYS.search(k.strip())]
            for key in mine:
                kept[key] = kernel
        entry["dispatch"] = kept
    return json.dumps(entry, sort_keys=True, default=str)
