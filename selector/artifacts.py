"""Write a Selection as the run artifacts of docs/conventions.md (byte-deterministic JSON)."""
from __future__ import annotations

import json
from pathlib import Path

from selector.model import Decision, Selection

# The list written one item per line, compact: explanations.json holds every test considered (about
# 74,000 on a release, 158 MB), which a reader greps a test's line out of; and indenting it took
# json's pure-Python encoder 5 s where its C encoder writes each line (it only indents nothing).
ONE_PER_LINE = {"explanations.json": "tests"}


def dumps(name: str, document: dict) -> str:
    """The artifact ``name``'s text: indented, keys sorted; byte-deterministic."""
    listed = ONE_PER_LINE.get(name)
    if listed is None or not isinstance(document.get(listed), list) or not document[listed]:
        return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    compact = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode  # one encoder, not one per item

    fields = []
    for key in sorted(document):
        value = document[key]
        text = "[\n" + ",\n".join("    " + compact(item) for item in value) + "\n  ]" if key == listed \
            else compact(value)
        fields.append(f"  {compact(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def selection_document(selection: Selection) -> dict:
    return {"from_ref": selection.from_ref, "to_ref": selection.to_ref, "from_sha": selection.from_sha,
            "to_sha": selection.to_sha, "tests": selection.tests, "shards": selection.shards}


def explanations_document(selection: Selection) -> dict:
    """Every decision with its position in the run order; an evidence's empty fields left out, the
    decision's own kept as null."""
    position = {test_id: index for index, test_id in enumerate(selection.tests)}
    fields = list(Decision.model_fields)
    tests = []
    for decision in selection.decisions:
        # exclude_none in pydantic's own serializer, then the decision's empty fields put back:
        # filtering each evidence dict in Python cost a second per 74,000 tests
        entry = decision.model_dump(mode="json", exclude_none=True)
        for name in fields:
            entry.setdefault(name, None)
        entry["position"] = position.get(decision.test_id)
        tests.append(entry)
    return {"from_ref": selection.from_ref, "to_ref": selection.to_ref, "tests": tests}


def write(selection: Selection, out_dir: str | Path) -> dict[str, Path]:
    """selection.json, explanations.json and funnel.json in ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    documents = {
        "selection.json": selection_document(selection),
        "explanations.json": explanations_document(selection),
        "funnel.json": dict(selection.funnel),
    }
    paths = {}
    for name, document in documents.items():
        path = out / name
        path.write_text(dumps(name, document), encoding="utf-8")
        paths[name] = path
    return paths
