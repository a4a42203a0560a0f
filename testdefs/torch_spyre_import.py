"""Convert torch-spyre's ``test_suite_config`` YAML into a testdefs rules file.

torch-spyre keeps its reasons as YAML comments, which a YAML parser throws away; this importer reads
the composed node tree for structure and line numbers and the raw lines for the comments:

- a name's own trailing comment (``- TestFoo::test_bar  # NotImplementedError ... #549``),
- else the comment lines just above it inside the ``names`` list (a group heading),
- else the item's comment: the block above ``- names:`` and the comment on the ``names:`` line.
A group heading is kept alongside a trailing comment ("group: ...") since it often says why the
test is skipped rather than how it failed. Commented-out names (``# - TestFoo::test_bar``) are not
rules: they are listed, not imported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from testdefs.schema import Category, Mode

_PATH_TOKEN = re.compile(r"^\$\{(TORCH_ROOT|PYTORCH_ROOT|TORCH_DEVICE_ROOT|TORCH_SPYRE_ROOT)\}/")
_URL = re.compile(r"https?://\S+")
_COMMENTED_NAME = re.compile(r"^-\s*[\w*]+(::[\w*]+)?\s*(#|$)")
_CATEGORY_HINTS: list[tuple[Category, re.Pattern[str]]] = [
    (Category.crash, re.compile(r"segmentation fault|seg ?fault|signal received|abort|heap corruption|crash",
                                re.I)),
    (Category.unsupported_dtype, re.compile(r"dtype|double|complex|float64", re.I)),
    (Category.unsupported_op, re.compile(r"notimplemented|not implemented|could not run|codegen|not supported", re.I)),
    (Category.numerics, re.compile(r"not close|tolerance|precision|mismatch", re.I)),
    (Category.upstream_bug, re.compile(r"new test|added in pytorch", re.I)),
    (Category.timeout, re.compile(r"timeout|timed out", re.I)),
]
_NO_REASON = "no reason recorded in the torch-spyre config"


class ImportError_(ValueError):
    """The input is not a torch-spyre test_suite_config document."""


@dataclass
class ImportReport:
    duplicates: list[str] = field(default_factory=list)
    guessed: list[str] = field(default_factory=list)  # skip/xfail names without any comment
    not_converted: list[str] = field(default_factory=list)
    commented_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"duplicate: {d}" for d in self.duplicates]
        out += [f"no reason: {g}" for g in self.guessed]
        out += [f"not converted: {n}" for n in self.not_converted]
        out += [f"commented out (not imported): {c}" for c in self.commented_out]
        out += [f"note: {n}" for n in self.notes]
        return out

    def to_dict(self) -> dict:
        return {"duplicates": self.duplicates, "no_reason": self.guessed, "not_converted": self.not_converted,
                "commented_out": self.commented_out, "notes": self.notes}


def _comment_text(line: str) -> str:
    """``  # ---- Tests that fail ----`` -> ``Tests that fail``; decoration-only lines -> ''."""
    text = line.strip().lstrip("#").strip()
    return text.strip("#-=* ").strip()


def _trailing_comment(line: str, column: int) -> str:
    rest = line[column:]
    return _comment_text(rest[rest.index("#"):]) if "#" in rest else ""


def _tags(test: dict) -> tuple[str, ...]:
    """torch-spyre tags are pytest marks too; keep them, made into valid marker names."""
    return tuple(re.sub(r"\W", "_", str(tag)) for tag in test.get("tags") or [])


def infer_category(text: str) -> Category | None:
    for category, pattern in _CATEGORY_HINTS:
        if pattern.search(text):
            return category
    return None


@dataclass
class _Name:
    name: str
    line: int
    mode: Mode
    texts: list[str]
    item: int
    tags: tuple[str, ...] = ()


class _Reader:
    def __init__(self, text: str, source: str) -> None:
        self.lines = text.splitlines()
        self.source = source

    def comments_above(self, line_index: int, stop: int) -> list[str]:
        """Comment lines directly above ``line_index`` (0-based), not crossing non-comment content."""
        found: list[str] = []
        index = line_index - 1
        while index > stop:
            raw = self.lines[index].strip()
            if raw and not raw.startswith("#"):
                break
            if raw.startswith("#") and not _COMMENTED_NAME.match(raw.lstrip("#").strip()):
                text = _comment_text(raw)
                if text:
                    found.insert(0, text)
            index -= 1
        return found

    def commented_names(self, start: int, end: int) -> list[str]:
        out = []
        for index in range(start, min(end, len(self.lines))):
            raw = self.lines[index].strip()
            if raw.startswith("#") and _COMMENTED_NAME.match(raw.lstrip("#").strip()):
                out.append(f"{self.source}:{index + 1}: {raw.lstrip('#').strip()}")
        return out


def _mapping(node: yaml.Node) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def convert(text: str, source: str = "<torch-spyre config>") -> tuple[str, ImportReport]:
    """Return (testdefs rules YAML text, report)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ImportError_(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "test_suite_config" not in data:
        raise ImportError_(f"{source}: expected a mapping with the key test_suite_config (a torch-spyre config)")
    config, config_node = data["test_suite_config"] or {}, _mapping(root)["test_suite_config"]
    reader = _Reader(text, source)
    report = ImportReport()
    if config.get("labels"):
        report.not_converted.append(f"labels {config['labels']} (suite-level CI filter)")
    files_out = []
    file_nodes = _mapping(config_node).get("files")
    for f_index, file_cfg in enumerate(config.get("files") or []):
        file_node = file_nodes.value[f_index]
        files_out.append(_convert_file(file_cfg, file_node, reader, report))
    global_out = _convert_global(config.get("global") or {}, report)
    return _render(source, global_out, files_out), report


def _convert_file(file_cfg: dict, file_node: yaml.Node, reader: _Reader, report: ImportReport) -> dict:
    path = _PATH_TOKEN.sub("", str(file_cfg.get("path", "")))
    unlisted = file_cfg.get("unlisted_test_mode")
    if unlisted is None:
        unlisted = "xfail"
        report.notes.append(f"{path}: no unlisted_test_mode; wrote torch-spyre's code default xfail")
    tests_node = _mapping(file_node).get("tests")
    names: list[_Name] = []
    extra_entries: list[dict] = []
    previous_start = file_node.start_mark.line
    for t_index, test in enumerate(file_cfg.get("tests") or []):
        item_node = tests_node.value[t_index]
        names_node = _mapping(item_node).get("names")
        mode = Mode(test.get("mode") or "mandatory_success")
        item_line = item_node.start_mark.line
        item_texts = reader.comments_above(item_line, previous_start)
        first_line = reader.lines[item_line]
        if "#" in first_line and _comment_text(first_line[first_line.index("#"):]):
            item_texts.append(_comment_text(first_line[first_line.index("#"):]))
        if isinstance(names_node, yaml.SequenceNode):
            report.commented_out.extend(reader.commented_names(item_line, names_node.end_mark.line + 1))
            group: list[str] = []
            last_line = item_line
            for scalar in names_node.value:
                line = scalar.start_mark.line
                above = reader.comments_above(line, last_line)
                if above:
                    group = above
                trailing = _trailing_comment(reader.lines[line], scalar.end_mark.column)
                texts = [trailing] if trailing else []
                texts += [f"group: {'; '.join(group)}"] if group else []
                texts += [] if texts else item_texts
                names.append(_Name(str(scalar.value), line + 1, mode, texts, t_index, _tags(test)))
                last_line = line
        edits = test.get("edits") or {}
        if edits:
            own_texts = [t for n in names if n.item == t_index for t in n.texts if t not in item_texts]
            extra_entries += _convert_edits(test, edits, mode, list(dict.fromkeys(item_texts + own_texts)),
                                            item_line + 1, report, path)
        previous_start = item_line
    entries = _merge_names(names, report, reader.source) + extra_entries
    return {"path": path, "unlisted_test_mode": unlisted, "entries": entries}


def _reason(mode: Mode, texts: list[str], where: str, report: ImportReport) -> tuple[dict | None, list[str]]:
    """A structured reason for non-success modes; free comments for mandatory_success."""
    text = "; ".join(t for t in texts if t)
    if mode == Mode.mandatory_success:
        return None, ([text] if text else [])
    tags = []
    if not text:
        report.guessed.append(where)
        text, category, tags = _NO_REASON, Category.not_applicable, ["needs_reason"]
    else:
        # The most specific comment (a name's own, then its group, then the item's) decides the category.
        category = next((c for t in texts if t and (c := infer_category(t)) is not None), None)
        if category is None:
            category, tags = Category.not_applicable, ["needs_category"]
    return _reason_dict(category, text), tags


def _reason_dict(category: Category, text: str) -> dict:
    reason: dict = {"category": category.value, "text": text}
    url = _URL.search(text)
    if url:
        reason["issue"] = url.group(0).rstrip(").,;")
    return reason


def _merge_names(names: list[_Name], report: ImportReport, source: str) -> list[dict]:
    """One entry per run of consecutive names sharing mode and reason; duplicates merged and listed."""
    first: dict[str, _Name] = {}
    kept: list[_Name] = []
    for item in names:
        if item.name in first:
            earlier = first[item.name]
            report.duplicates.append(f"{item.name} at {source}:{earlier.line} ({earlier.mode}) and "
                                     f"{source}:{item.line} ({item.mode})")
            if earlier.mode == Mode.mandatory_success and item.mode != Mode.mandatory_success:
                earlier.mode = item.mode
            earlier.texts = earlier.texts + [t for t in item.texts if t not in earlier.texts]
            continue
        first[item.name] = item
        kept.append(item)
    entries: list[dict] = []
    previous_key = None
    for item in kept:
        reason, extra = _reason(item.mode, item.texts, f"{source}:{item.line} {item.name}", report)
        key = (item.mode, repr(reason), tuple(extra), item.item, item.tags)
        if key == previous_key:
            entries[-1]["match"].append(item.name)
            continue
        entry: dict = {"match": [item.name], "mode": item.mode.value}
        if reason:
            entry["reason"] = reason
        if reason is None and extra:
            entry["_comment"] = extra[0]
            extra = []
        if item.tags or extra:
            entry["tags"] = [*item.tags, *extra]
        entries.append(entry)
        previous_key = key
    return entries


def _convert_edits(test: dict, edits: dict, mode: Mode, texts: list[str], line: int,
                   report: ImportReport, path: str) -> list[dict]:
    """Dtype/op edits become their own entries (more specific, so they win for their variants)."""
    names = list(test.get("names") or [])
    out: list[dict] = []
    where = f"{path} item at line {line}"
    dtypes = edits.get("dtypes") or {}
    for kind in ("ops", "dtypes"):
        section = edits.get(kind) or {}
        for spec in section.get("exclude") or []:
            name = spec["name"] if isinstance(spec, dict) else spec
            text = (spec.get("description") if isinstance(spec, dict) else None) or "; ".join(texts) \
                or f"{kind[:-1]} {name} excluded by the torch-spyre config"
            category = infer_category(text) or (Category.unsupported_dtype if kind == "dtypes" else Category.unsupported_op)
            out.append({"match": names, "mode": Mode.exclude.value,
                        kind: {"include": [name]}, "reason": _reason_dict(category, text)})
    includes = [s["name"] if isinstance(s, dict) else s for s in dtypes.get("include") or []]
    if includes:
        entry: dict = {"match": names, "mode": mode.value, "dtypes": {"include": includes}}
        reason, _ = _reason(mode, texts, where, report)
        if reason:
            entry["reason"] = reason
        out.append(entry)
    for spec in dtypes.get("include") or []:
        if isinstance(spec, dict) and spec.get("precision"):
            entry = {"match": names, "mode": mode.value, "dtypes": {"include": [spec["name"]]},
                     "precision": spec["precision"]}
            reason, _ = _reason(mode, texts, where, report)
            if reason:
                entry["reason"] = reason
            out.append(entry)
        if isinstance(spec, dict) and spec.get("force_xfail"):
            report.not_converted.append(f"{where}: force_xfail on dtype {spec['name']}")
    op_includes = [s["name"] if isinstance(s, dict) else s for s in (edits.get("ops") or {}).get("include") or []]
    if op_includes:
        entry = {"match": names, "mode": mode.value, "ops": {"include": op_includes}}
        reason, _ = _reason(mode, texts, where, report)
        if reason:
            entry["reason"] = reason
        out.append(entry)
    for key in edits:
        if key not in ("dtypes", "ops"):
            report.not_converted.append(f"{where}: edits.{key}")
    if test.get("labels"):
        report.not_converted.append(f"{where}: labels {test['labels']}")
    return out


def _convert_global(global_cfg: dict, report: ImportReport) -> dict:
    out: dict = {}
    dtypes = []
    for spec in global_cfg.get("supported_dtypes") or []:
        spec = {"name": spec} if isinstance(spec, str) else dict(spec)
        if spec.pop("force_xfail", None):
            report.not_converted.append(f"global: force_xfail on dtype {spec['name']}")
        dtypes.append(spec if spec.get("precision") else spec["name"])
    if dtypes:
        out["supported_dtypes"] = dtypes
    ops = []
    for spec in global_cfg.get("supported_ops") or []:
        if isinstance(spec, str):
            ops.append(spec)
            continue
        spec = dict(spec)
        if spec.pop("force_xfail", None):
            report.not_converted.append(f"global: force_xfail on op {spec['name']}")
        if spec.get("dtypes"):
            spec["dtypes"] = [{k: v for k, v in d.items() if k in ("name", "precision")} if isinstance(d, dict)
                              else d for d in spec["dtypes"]]
        ops.append(spec if len(spec) > 1 else spec["name"])
    if ops:
        out["supported_ops"] = ops
    for key in global_cfg:
        if key not in ("supported_dtypes", "supported_ops"):
            report.not_converted.append(f"global.{key}")
    return out


def _dump(value, indent: int) -> list[str]:
    text = yaml.safe_dump(value, sort_keys=False, width=4096, allow_unicode=True, default_flow_style=False)
    return [" " * indent + line for line in text.splitlines()]


def _render(source: str, global_out: dict, files_out: list[dict]) -> str:
    lines = [f"# Imported from {source} by `relay-cli testdefs import-torch-spyre`.",
             "# Reasons were YAML comments there; categories are inferred from their words.", "version: 1"]
    if global_out:
        lines += _dump({"global": global_out}, 0)
    lines.append("files:")
    for file_out in files_out:
        lines += _dump([{"path": file_out["path"], "unlisted_test_mode": file_out["unlisted_test_mode"]}], 2)
        lines.append("    entries:")
        for entry in file_out["entries"]:
            comment = entry.pop("_comment", None)
            if comment:
                lines.append(f"      # torch-spyre: {comment}")
            lines += _dump([entry], 6)
    return "\n".join(lines) + "\n"
