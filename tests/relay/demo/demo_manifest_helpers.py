"""Shared pieces of the demo tests: a generated demo upstream and its stage-1 report."""
from __future__ import annotations

import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEMO_RULES = REPO_ROOT / "testdefs" / "rules" / "demo"


def load_manifest(demo_dir: Path) -> dict:
    return json.loads((demo_dir / "demo-changeset.json").read_text())


def expected_changes(manifest: dict) -> dict[str, str]:
    """test id -> change kind, from the manifest's ground truth."""
    out = {}
    for kind, items in manifest["candidates"].items():
        for item in items:
            out[item["test"] if isinstance(item, dict) else item] = kind
    return out
