"""native_functions.yaml and derivatives.yaml: which ops an edit touches."""
from __future__ import annotations

import json
import re

import yaml

from selector.changes.yaml_items import LOADER, YamlItemError, diff_items, item_starts

_NAME = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*\(")


def op_entries(text: str | None, key: str) -> tuple[dict[str, tuple[str, int]], str | None]:
    """overload name -> (canonical dump, line) for every entry; plus a parse error, if any."""
    if text is None:
        return {}, None
    try:
        data = yaml.load(text, Loader=LOADER) or []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return {}, f"line {mark.line + 1}: {getattr(exc, 'problem', exc)}" if mark else str(exc)
    lines = item_starts(text)  # one top-level block sequence: item i starts at the i-th "- " in column 0
    items = data if isinstance(data, list) else []
    return _named([(lines[i] if i < len(lines) else 0, entry) for i, entry in enumerate(items)], key), None


def changed_ops(before: str | None, after: str | None, key: str) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """{base op name: (how, line)} for the entries added, removed or modified between two versions
    of a file, and its parse errors. Only entries whose text differs are parsed (see yaml_items);
    a side that does not parse there is parsed whole, as before, so its error is reported."""
    try:
        diff = diff_items(before, after) if before is not None and after is not None else None
    except YamlItemError:
        diff = None
    if diff is None:
        return _compare(op_entries(before, key), op_entries(after, key))
    return _compare((_named(diff.removed, key), None), (_named(diff.added, key), None))


def _named(items: list[tuple[int, object]], key: str) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for line, entry in items:
        if isinstance(entry, dict) and isinstance(entry.get(key), str):
            found = _NAME.match(entry[key])
            if found:
                out[found.group(1)] = (json.dumps(entry, sort_keys=True, default=str), line)
    return out


def _compare(old: tuple[dict, str | None], new: tuple[dict, str | None]) -> tuple[dict[str, tuple[str, int]],
                                                                              list[str]]:
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
