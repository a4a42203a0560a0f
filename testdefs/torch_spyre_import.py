"""Convert a torch-spyre ``test_suite_config`` YAML into a testdefs rules file that decides every
variant the way torch-spyre would, and keeps every reason.

What torch-spyre means, and how it is written here (docs/testdefs.md, "torch-spyre compatibility"):

- ``skip`` deletes the variant (it is never collected): imported as ``exclude``; so is
  ``unlisted_test_mode: skip``. A missing ``unlisted_test_mode`` is torch-spyre's code default ``xfail``.
- ``global.supported_dtypes`` / ``supported_ops`` filter the variants torch-spyre generates: imported
  with ``exclude_unsupported: true``.
- ``edits.dtypes.include`` / ``edits.ops.include`` *add* variants: an entry with ``generate`` (the
  device test base generates them) and the filter that lifts the global exclusion for them.
  ``exclude`` lists become ``exclude`` entries for those dtypes / ops.
- Modes are looked up by method name and the last entry wins: when a method is listed more than
  once (also under two classes), every listing gets the last entry's mode, and the report names
  each listing whose own mode was overridden.
- Reasons are comments (``torch_spyre_comments``): the failure class on the ``mode:`` line, a name's
  own comment, its group heading and the item's comment block become a structured ``reason``
  (category inferred from the words where they are clear, ``needs_category`` tag otherwise);
  comments of ``mandatory_success`` items and of files become ``note``; ``description`` fields are kept.
- Features with no equivalent (``functions.cpu_move``, ``modules``, ``inputs``, ``force_xfail`` on
  global entries, ``labels``, ``supported_modules``, ...) are listed in the report with file:line.

The report accounts for every name of the input: one record each, saying which entry it became.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from testdefs.reasons import infer_category, reason_dict
from testdefs.schema import Category, Mode
from testdefs.torch_spyre_comments import Comments, attribute
from testdefs.torch_spyre_config import LoadedConfig, TestItem, load_config_text, upstream_path

NO_REASON = "no reason recorded in the torch-spyre config"
_WORD_NAME = re.compile(r"(?:[A-Za-z_]\w*::)?[A-Za-z_]\w*")


@dataclass
class NameRecord:
    """One name of the input and what it became."""

    where: str  # file:line of the name
    name: str
    torch_spyre_mode: str  # the mode torch-spyre applies (after last-wins)
    imported_mode: str
    entry: int | None  # index of the imported entry in its file section; None when merged into another
    note: str = ""

    def to_dict(self) -> dict:
        return {"where": self.where, "name": self.name, "torch_spyre_mode": self.torch_spyre_mode,
                "imported_mode": self.imported_mode, "entry": self.entry, "note": self.note}


@dataclass
class ImportReport:
    names: list[NameRecord] = field(default_factory=list)
    overridden: list[str] = field(default_factory=list)  # last-wins changed a listing's own mode
    duplicates: list[str] = field(default_factory=list)
    guessed: list[str] = field(default_factory=list)  # non-success names without any comment
    not_converted: list[str] = field(default_factory=list)
    commented_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    comment_lines: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"duplicate: {d}" for d in self.duplicates]
        out += [f"last wins: {o}" for o in self.overridden]
        out += [f"no reason: {g}" for g in self.guessed]
        out += [f"not converted: {n}" for n in self.not_converted]
        out += [f"commented out (not imported): {c}" for c in self.commented_out]
        out += [f"note: {n}" for n in self.notes]
        counts = {}
        for record in self.names:
            counts[record.imported_mode] = counts.get(record.imported_mode, 0) + 1
        out.append(f"{len(self.names)} name(s) imported: " + ", ".join(f"{n} {m}" for m, n in sorted(counts.items())))
        return out

    def to_dict(self) -> dict:
        return {"names": [r.to_dict() for r in self.names], "overridden": self.overridden,
                "duplicates": self.duplicates, "no_reason": self.guessed, "not_converted": self.not_converted,
                "commented_out": self.commented_out, "notes": self.notes, "comment_lines": self.comment_lines}


def convert(text: str, source: str = "<torch-spyre config>", *, allow_regex: bool = False) -> tuple[str, ImportReport]:
    """Return (testdefs rules YAML text, report); raise ``ConfigError`` listing problems with file:line."""
    loaded = load_config_text(text, source, allow_regex=allow_regex)
    document, report = convert_loaded(loaded)
    return render(source, document), report


def convert_loaded(loaded: LoadedConfig) -> tuple[dict, ImportReport]:
    comments = attribute(loaded.text, loaded.data, loaded.lines)
    report = ImportReport()
    converter = _Converter(loaded, comments, report)
    document = converter.document()
    report.commented_out = [f"{loaded.name}:{line}: {raw}" for line, raw in comments.commented_out]
    report.comment_lines = {"decoration_only": comments.decoration, "commented_out": len(comments.commented_out)}
    return document, report


class _Converter:
    def __init__(self, loaded: LoadedConfig, comments: Comments, report: ImportReport) -> None:
        self.loaded = loaded
        self.comments = comments
        self.report = report
        self.lines = loaded.lines
        self.suite_data = loaded.data["test_suite_config"]

    def where(self, *path: str | int) -> str:
        return f"{self.loaded.name}:{self.lines.line_of(('test_suite_config', *path)) or 1}"

    def document(self) -> dict:
        config = self.loaded.config
        out: dict = {"version": 1}
        global_out = self.global_section()
        if global_out:
            out["global"] = global_out
        if config.labels:
            self.report.not_converted.append(f"{self.where('labels')}: labels {config.labels} "
                                             "(suite-level CI filter; testdefs selects tests with -m and tags)")
        out["files"] = [self.file_section(fi) for fi in range(len(config.files))]
        return out

    # -- global ---------------------------------------------------------------------------------

    def global_section(self) -> dict:
        section = self.loaded.config.global_
        if section is None:
            return {}
        out: dict = {}
        dtypes = []
        for k, spec in enumerate(section.supported_dtypes):
            if spec.force_xfail:
                self.report.not_converted.append(f"{self.where('global', 'supported_dtypes', k)}: force_xfail on "
                                                 f"dtype {spec.name} (mandatory_success -> xfail for that dtype)")
            dtypes.append(_dtype_spec(spec))
        if dtypes:
            out["supported_dtypes"] = dtypes
        ops = []
        for k, spec in enumerate(section.supported_ops):
            if spec.force_xfail:
                self.report.not_converted.append(f"{self.where('global', 'supported_ops', k)}: force_xfail on "
                                                 f"op {spec.name} (mandatory_success -> xfail for that op)")
            item: dict = {"name": spec.name}
            if spec.dtypes:
                item["dtypes"] = [_dtype_spec(d) for d in spec.dtypes]
                for d in spec.dtypes:
                    if d.force_xfail:
                        self.report.not_converted.append(
                            f"{self.where('global', 'supported_ops', k)}: force_xfail on op {spec.name} dtype {d.name}")
            if spec.description:
                item["description"] = spec.description
            ops.append(item if len(item) > 1 else spec.name)
        if ops:
            out["supported_ops"] = ops
        if dtypes or ops:
            out["exclude_unsupported"] = True  # torch-spyre generates only supported variants
        for key in ("supported_modules", "input_config", "devices"):
            if getattr(section, key):
                self.report.not_converted.append(f"{self.where('global', key)}: global.{key}")
        if self.comments.global_notes:
            self.report.notes.append(f"{self.where('global')}: global comments: "
                                     + "; ".join(self.comments.global_notes))
        return out

    # -- files ----------------------------------------------------------------------------------

    def file_section(self, fi: int) -> dict:
        file_cfg = self.loaded.config.files[fi]
        path = upstream_path(file_cfg.path)
        unlisted = file_cfg.unlisted_test_mode
        if unlisted is None:
            unlisted = "xfail"
            self.report.notes.append(f"{self.where('files', fi)}: {path}: no unlisted_test_mode; "
                                     "wrote torch-spyre's code default xfail")
        out: dict = {"path": path, "unlisted_test_mode": _mode(unlisted).value}
        notes = ([*self.comments.document] if fi == 0 else []) + self.comments.files.get(fi, [])
        if file_cfg.description:
            notes.append(file_cfg.description)
        if unlisted == "skip":
            notes.append("unlisted tests: torch-spyre's unlisted_test_mode skip (never generated)")
        if notes:
            out["note"] = " | ".join(notes)
        out["entries"] = self.entries(fi, path)
        return out

    def entries(self, fi: int, path: str) -> list[dict]:
        file_cfg = self.loaded.config.files[fi]
        # torch-spyre looks modes up by method name; the last entry naming a method wins.
        last_item: dict[str, int] = {}
        last_name: dict[str, int] = {}  # method -> index of its name in the last item listing it
        first_seen: dict[str, str] = {}
        for ti, item in enumerate(file_cfg.tests):
            for ni, name in enumerate(item.names):
                method = name.rpartition("::")[2]
                last_item[method], last_name[method] = ti, ni
                where = self.where("files", fi, "tests", ti, "names", ni)
                if name in first_seen:
                    self.report.duplicates.append(f"{name} at {first_seen[name]} and {where}; torch-spyre uses "
                                                  "the last, and so does the import")
                else:
                    first_seen[name] = where
        entries: list[dict] = []
        keys: list[tuple] = []
        emitted: set[str] = set()
        for ti, item in enumerate(file_cfg.tests):
            for ni, name in enumerate(item.names):
                method = name.rpartition("::")[2]
                where = self.where("files", fi, "tests", ti, "names", ni)
                decider = last_item[method]
                own_mode = item.mode or "mandatory_success"
                spyre_mode = file_cfg.tests[decider].mode or "mandatory_success"
                if decider != ti and spyre_mode != own_mode:
                    self.report.overridden.append(
                        f"{name} at {where} is listed as {own_mode}, but torch-spyre applies {spyre_mode} from "
                        f"the last entry for {method} ({self.where('files', fi, 'tests', decider)})")
                mode = _mode(spyre_mode)
                if name in emitted:  # a duplicate: merged into the entry written for its last listing
                    self.report.names.append(NameRecord(where, name, spyre_mode, mode.value, None,
                                                        "duplicate; decided by the last listing"))
                    continue
                texts = self.texts(fi, decider, ni if decider == ti else last_name[method])
                if decider != ti:
                    texts += [f"own listing ({where}): {t}" for t in self.texts(fi, ti, ni)]
                entry = self.entry_for(name, mode, texts, file_cfg.tests[decider], f"{where} {name}")
                key = (entry["mode"], repr(entry.get("reason")), entry.get("note"), tuple(entry.get("tags", [])), ti)
                if entries and keys[-1] == key and "dtypes" not in entries[-1]:
                    entries[-1]["match"].append(match_text(name))
                else:
                    entries.append(entry)
                    keys.append(key)
                emitted.add(name)
                self.report.names.append(NameRecord(where, name, spyre_mode, mode.value, len(entries) - 1))
            entries += self.edits(fi, ti, item, path)
        return entries

    def texts(self, fi: int, ti: int, ni: int | None) -> list[str]:
        """The comments that explain a name, most specific first: failure class, own, group, item."""
        out = []
        if (fi, ti) in self.comments.modes:
            out.append(self.comments.modes[(fi, ti)])
        if ni is not None and (fi, ti, ni) in self.comments.names:
            out.append(self.comments.names[(fi, ti, ni)])
        if ni is not None and (fi, ti, ni) in self.comments.groups:
            out.append(" ".join(self.comments.groups[(fi, ti, ni)]))
        if (fi, ti) in self.comments.items:
            out.append(" ".join(self.comments.items[(fi, ti)]))
        description = self.loaded.config.files[fi].tests[ti].description
        if description:
            out.append(description)
        return out

    def entry_for(self, name: str, mode: Mode, texts: list[str], item: TestItem, where: str) -> dict:
        entry: dict = {"match": [match_text(name)], "mode": mode.value}
        reason, tags = self.reason(mode, texts, where)
        if reason:
            entry["reason"] = reason
        elif texts:
            entry["note"] = " | ".join(texts)
        tags = [*_tags(item), *tags]
        if tags:
            entry["tags"] = tags
        return entry

    def reason(self, mode: Mode, texts: list[str], where: str) -> tuple[dict | None, list[str]]:
        if mode == Mode.mandatory_success:
            return None, []
        text = " | ".join(t for t in texts if t)
        if not text:
            self.report.guessed.append(where)
            return {"category": Category.not_applicable.value, "text": NO_REASON}, ["needs_reason"]
        category = next((c for t in texts if t and (c := infer_category(t)) is not None), None)
        tags = [] if category else ["needs_category"]
        return reason_dict(category or Category.not_applicable, text), tags

    def edits(self, fi: int, ti: int, item: TestItem, path: str) -> list[dict]:
        """Dtype/op edits: excludes become ``exclude`` entries, includes generate variants."""
        edits = item.edits
        if edits is None:
            return []
        names = [match_text(name) for name in item.names]
        mode = _mode(item.mode or "mandatory_success")
        texts = self.texts(fi, ti, None)
        loc = ("files", fi, "tests", ti, "edits")
        out: list[dict] = []
        for kind, section in (("dtypes", edits.dtypes), ("ops", edits.ops)):
            if section is None:
                continue
            for spec in section.exclude:
                text = spec.description or " | ".join(texts) or f"{kind[:-1]} {spec.name} excluded by the torch-spyre config"
                fallback = Category.unsupported_dtype if kind == "dtypes" else Category.unsupported_op
                out.append({"match": names, "mode": Mode.exclude.value, kind: {"include": [spec.name]},
                            "reason": reason_dict(infer_category(text) or fallback, text)})
            if section.include:
                included = [spec.name for spec in section.include]
                entry: dict = {"match": names, "mode": mode.value, kind: {"include": included},
                               "generate": {kind: included}}
                reason, tags = self.reason(mode, texts, f"{self.where(*loc, kind)} {names}")
                if reason:
                    entry["reason"] = reason
                if tags:
                    entry["tags"] = tags
                out.append(entry)
        if edits.dtypes is not None:
            for k, spec in enumerate(edits.dtypes.include):
                if spec.precision is not None and (spec.precision.atol is not None or spec.precision.rtol is not None):
                    entry = {"match": names, "mode": mode.value, "dtypes": {"include": [spec.name]},
                             "generate": {"dtypes": [spec.name]},
                             "precision": spec.precision.model_dump(exclude_none=True)}
                    reason, _ = self.reason(mode, texts, self.where(*loc, "dtypes", "include", k))
                    if reason:
                        entry["reason"] = reason
                    out.append(entry)
                if spec.force_xfail and mode == Mode.mandatory_success:
                    text = spec.description or f"force_xfail on dtype {spec.name} in the torch-spyre config"
                    out.append({"match": names, "mode": Mode.xfail.value, "dtypes": {"include": [spec.name]},
                                "generate": {"dtypes": [spec.name]},
                                "reason": reason_dict(infer_category(text) or Category.unsupported_dtype, text)})
        for key in ("functions", "modules", "inputs"):
            if getattr(edits, key):
                self.report.not_converted.append(f"{self.where(*loc, key)}: edits.{key} of {', '.join(names)}")
        if item.labels:
            self.report.not_converted.append(f"{self.where('files', fi, 'tests', ti, 'labels')}: labels "
                                             f"{item.labels} of {', '.join(names)}")
        if item.selectors:
            self.report.not_converted.append(f"{self.where('files', fi, 'tests', ti, 'selectors')}: selectors "
                                             "(planned in torch-spyre, no effect there either)")
        return out


def match_text(name: str) -> str:
    """A torch-spyre name as a testdefs pattern. Names with non-word characters are regexes there
    (matched from the start of the method name); they only get here with --allow-regex."""
    if _WORD_NAME.fullmatch(name):
        return name
    class_part, sep, method = name.rpartition("::")
    if sep and _WORD_NAME.fullmatch(class_part):
        return f"re:{class_part}::(?:{method}).*"
    return f"re:(?:{name}).*"


def _mode(spyre_mode: str) -> Mode:
    """torch-spyre's skip deletes the variant: testdefs' exclude."""
    return Mode.exclude if spyre_mode == "skip" else Mode(spyre_mode)


def _dtype_spec(spec) -> dict | str:
    out: dict = {"name": spec.name}
    if spec.precision is not None and (spec.precision.atol is not None or spec.precision.rtol is not None):
        out["precision"] = spec.precision.model_dump(exclude_none=True)
    if spec.description:
        out["description"] = " ".join(spec.description.split())
    return out if len(out) > 1 else spec.name


def _tags(item: TestItem) -> list[str]:
    """torch-spyre tags are pytest marks too; keep them, made into valid marker names."""
    out = []
    for tag in item.tags:
        name = re.sub(r"\W", "_", str(tag))
        out.append(name if re.match(r"[A-Za-z_]", name) else f"tag_{name}")
    return out


def render(source: str, document: dict) -> str:
    header = [f"# Imported from {source} by `relay-cli testdefs import-torch-spyre`.",
              "# Reasons were YAML comments there; categories are inferred from their words",
              "# (entries tagged needs_category / needs_reason want a person's look)."]
    body = yaml.safe_dump(document, sort_keys=False, width=4096, allow_unicode=True, default_flow_style=False)
    return "\n".join(header) + "\n" + body
