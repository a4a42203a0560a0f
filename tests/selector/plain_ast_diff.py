"""An independent plain AST diff of upstream test methods, to check stage 1 against.

Written apart from ``selector.inventory``/``selector.changes`` on purpose (no shared code): one
``git cat-file --batch`` per ref, ``ast.parse`` per file, every ``test*`` function of a module,
of a class, or inside ``if``/``try``/``with`` blocks, compared by ``ast.dump`` with the leading
docstring dropped. Renames are not paired, helpers are not followed.

    .venv/bin/python tests/selector/plain_ast_diff.py /tmp/pytorch-1.13-2.0 v1.13.0 v2.0.0

prints where stage 1 and this diff disagree, counted by the documented rule that explains each
disagreement (docs/upstream.md), and exits 1 if any disagreement has no rule.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

SYMLINK = "120000"
# what stage 1's reasons say for a change to a test's class rather than to the test (docs/upstream.md)
CLASS_LEVEL = ("class decorators, bases or attributes", "instantiate_device_type_tests arguments")


def _symlinks(repo: Path, ref: str) -> set[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", ref], capture_output=True, text=True,
                         check=True).stdout
    return {r.split("\t", 1)[1] for r in filter(None, out.split("\0")) if r.startswith(SYMLINK)}


def _test_files(repo: Path, ref: str) -> dict[str, str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", ref], capture_output=True, text=True,
                         check=True).stdout
    found = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, kind, oid = meta.split()
        name = path.rsplit("/", 1)[-1]
        if kind == "blob" and mode != SYMLINK and name.startswith("test_") and name.endswith(".py") \
                and (path.startswith("test/") or "/test/" in path):
            found[path] = oid
    return found


def _blobs(repo: Path, oids: list[str]) -> dict[str, bytes]:
    data = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], input="".join(o + "\n" for o in oids).encode(),
                          capture_output=True, check=True).stdout
    out, at = {}, 0
    for oid in oids:
        end = data.index(b"\n", at)
        size = int(data[at:end].split()[2])
        out[oid] = data[end + 1:end + 1 + size]
        at = end + 1 + size + 1
    return out


def _methods(text: bytes) -> dict[str, str] | None:
    try:
        tree = ast.parse(text.decode("utf-8", "replace"))
    except (SyntaxError, ValueError):
        return None
    found: dict[str, str] = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, prefix + [node.name])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                        and isinstance(body[0].value.value, str):
                    body = body[1:]
                shape = [ast.dump(s) for s in body] + [ast.dump(node.args)] + [ast.dump(d) for d in node.decorator_list]
                found.setdefault("::".join(prefix + [node.name]), "\n".join(shape))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(node, part, []), prefix)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body, prefix)

    visit(tree.body, [])
    return found


def methods_at(repo: Path, ref: str) -> tuple[dict[str, str], list[str]]:
    """{file::Class::test: AST shape} at ``ref``, and the files that do not parse."""
    files = _test_files(repo, ref)
    blobs = _blobs(repo, sorted(set(files.values())))
    out, broken = {}, []
    for path, oid in sorted(files.items()):
        methods = _methods(blobs[oid])
        if methods is None:
            broken.append(path)
            continue
        out.update({f"{path}::{name}": shape for name, shape in methods.items()})
    return out, broken


def plain_diff(repo: Path, from_ref: str, to_ref: str) -> dict:
    old, broken_old = methods_at(repo, from_ref)
    new, broken_new = methods_at(repo, to_ref)
    return {"tests": len(new), "added": sorted(new.keys() - old.keys()), "removed": sorted(old.keys() - new.keys()),
            "modified": sorted(k for k in old.keys() & new.keys() if old[k] != new[k]),
            "broken": sorted(set(broken_old) | set(broken_new)),
            "symlinks": sorted(_symlinks(repo, from_ref) | _symlinks(repo, to_ref))}


def disagreements(plain: dict, report) -> dict[str, list[str]]:
    """Each stage-1/plain disagreement under the rule that explains it ("unexplained" if none)."""
    kinds: dict[str, set[str]] = {}
    for candidate in report.candidates:
        kinds.setdefault(candidate.change, set()).add(candidate.test_id)
    moved_from = set()
    for candidate in report.candidates:
        if candidate.change in ("moved", "renamed"):
            for reason in candidate.reasons:
                if reason.detail and " from " in reason.detail:
                    moved_from.add(reason.detail.split(" from ", 1)[1].removesuffix(" and modified"))
    selected = {c.test_id for c in report.candidates}
    removed = {r.test_id for r in report.removed}
    plain_scope = {t for t in selected | removed if t.startswith("test/") or "/test/" in t}
    broken = set(plain["broken"])
    out: dict[str, list[str]] = {}

    def rule(name: str, test_ids) -> None:
        out.setdefault(name, []).extend(sorted(test_ids))

    nested = "nested class (pytest does not collect it)"
    for test_id in set(plain["added"]) - selected:
        rule(nested if test_id.count("::") > 2 else "unexplained: added, not selected", [test_id])
    for test_id in set(plain["modified"]) - selected:
        rule(nested if test_id.count("::") > 2 else "unexplained: modified, not selected", [test_id])
    symlinks = set(plain["symlinks"])
    details = {c.test_id: " | ".join(r.detail or "" for r in c.reasons) for c in report.candidates}
    star = "star-imported test: pytest runs it in the importing file too (the plain diff lists it once)"
    for test_id in kinds.get("added", set()) - set(plain["added"]):
        rule("symlinked test file (the plain diff skips symlinks)" if test_id.split("::")[0] in symlinks
             else star if "star-imports" in details.get(test_id, "") else "unexplained: selected as added", [test_id])
    for test_id in kinds.get("modified", set()) - set(plain["modified"]):
        detail = details.get(test_id, "")
        why = "file does not parse at one ref" if test_id.split("::")[0] in broken else \
            star if "star-imports" in detail else \
            "class-level change (decorators, bases, attributes, instantiate args)" if any(
                marker in detail for marker in CLASS_LEVEL) else \
            "op list changed through module-level data (only the ops added)" if "added to its @ops list" in detail \
            else "unexplained: selected as modified"
        rule(why, [test_id])
    moved = kinds.get("moved", set()) | kinds.get("renamed", set())
    rule("move/rename: new side (plain: added)", moved & set(plain["added"]))
    for test_id in set(plain["removed"]) - removed:
        rule("move/rename: old side (plain: removed)" if test_id in moved_from else
             nested if test_id.count("::") > 2 else
             "file does not parse at one ref (reported as an error)" if test_id.split("::")[0] in broken else
             "unexplained: removed, not reported", [test_id])
    removed_why = {}
    for item in report.removed:
        removed_why[item.test_id] = removed_why.get(item.test_id, "") + f"{item.reason} op={item.op} | "
    for test_id in (removed & plain_scope) - set(plain["removed"]):
        why = removed_why.get(test_id, "")
        rule(star if "which it star-imports" in why else "OpInfo entry removed: variants gone, test kept"
             if "op=None" not in why else "unexplained: reported removed", [test_id])
    return out


def main(argv: list[str]) -> int:
    from selector.changes import analyse
    from selector.upstream import open_upstream
    repo, from_ref, to_ref = Path(argv[0]).resolve(), argv[1], argv[2]
    plain = plain_diff(repo, from_ref, to_ref)
    source = open_upstream(str(repo), cache_dir=Path(argv[3]) if len(argv) > 3 else repo.parent / "relay-cache")
    report = analyse(source, from_ref, to_ref)
    found = disagreements(plain, report)
    summary = {"plain": {k: (len(v) if isinstance(v, list) else v) for k, v in plain.items()},
               "stage1": dict(Counter(c.change for c in report.candidates)) | {"removed": len(report.removed),
                                                                                 "tests": report.inventory_to.counts()["tests"]},
               "disagreements": {rule: len(ids) for rule, ids in sorted(found.items())},
               "examples": {rule: ids[:3] for rule, ids in sorted(found.items())}}
    print(json.dumps(summary, indent=1))
    return 1 if any(rule.startswith("unexplained") for rule in found) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
