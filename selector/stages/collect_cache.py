"""What stage 4 collected on spyre, kept per file, so a second selection to the same tree collects nothing again.

A file's collection depends on more than its own text: the other modules of ``test/`` it imports
and its conftests, the installed torch and Python packages, the spyre backend, testdefs' test
base and plugin, and the environment. The key covers all of them: the blob id of every file
under ``test/`` at the to-ref, every installed distribution's name and version, the files of the
backend package and of testdefs (size and modification time), this collector's own source (and its
forking collector's) and
the collection environment's ``TORCH_``/``PYTORCH_``/``RELAY_``/``SPYRE_`` variables. So a
cached id was collected on spyre by this same environment from this same tree; anything else
is collected again. Only the default collector (a new interpreter of this Python) is cached: a
caller's runner may run another interpreter (a per-torch environment).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path

from selector.cache_dirs import mark_used
from selector.stages import collect as collector
from selector.stages import collect_fork

ENV_PREFIXES = ("TORCH_", "PYTORCH_", "RELAY_", "SPYRE_")


def _package_files(name: str) -> list[str]:
    """(path, size, mtime) of every file of an importable package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return [f"{name}: absent"]
    rows = []
    for location in spec.submodule_search_locations:
        for path in sorted(Path(location).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                stat = path.stat()
                rows.append(f"{path.relative_to(location)}:{stat.st_size}:{stat.st_mtime_ns}")
    return rows


def environment_key(env: dict[str, str]) -> str:
    """The collecting interpreter and everything it loads besides the upstream tree."""
    parts = [sys.version, sys.executable]
    parts += sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    parts += _package_files("spyre_device") + _package_files("testdefs")
    parts += [Path(module.__file__).read_text(encoding="utf-8") for module in (collector, collect_fork)]
    parts += sorted(f"{k}={v}" for k, v in env.items() if k.startswith(ENV_PREFIXES))
    return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def tree_key(source, sha: str) -> str | None:
    """The blob ids of every file under ``test/`` at ``sha``; None when the source does not name blobs."""
    if getattr(source, "blob_id", None) is None:
        return None
    rows = []
    for path in source.list_files(sha):
        if path.startswith("test/"):
            blob = source.blob_id(sha, path)
            rows.append(f"{path}:{blob or 'symlink'}")  # a symlink's target is itself a file listed here
    return hashlib.blake2b("\n".join(rows).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


class CollectCache:
    """Per-file collection results under ``<cache dir>/collect/<tree key>-<environment key>/``."""

    def __init__(self, cache_dir: Path, tree: str, environment: str) -> None:
        self.root = Path(cache_dir) / "collect" / f"{tree}-{environment}"
        mark_used(self.root)

    def holds_any(self) -> bool:
        """Whether this tree was collected in this environment before (by any selection)."""
        return any(self.root.glob("*.json"))

    def _path(self, file: str) -> Path:
        return self.root / (hashlib.blake2b(file.encode(), digest_size=10).hexdigest() + ".json")

    def get(self, file: str) -> tuple[list[str], str | None] | None:
        """(ids, error) collected from ``file`` earlier, or None."""
        try:
            data = json.loads(self._path(file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return (data["ids"], data["error"]) if data.get("file") == file else None

    def put(self, file: str, ids: list[str], error: str | None) -> None:
        target = self._path(file)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"file": file, "ids": ids, "error": error}), encoding="utf-8")
        temporary.replace(target)  # atomic: a parallel selection never reads half a file


def open_collect_cache(source, sha: str) -> CollectCache | None:
    cache_dir = getattr(source, "cache_dir", None)
    tree = tree_key(source, sha) if cache_dir is not None else None
    if tree is None:
        return None
    return CollectCache(Path(cache_dir), tree, environment_key(collector.collect_env()))


def collect_cached(cache: CollectCache | None, checkout: Path, files: list[str],
                   runner: collector.PytestRunner | None = None,
                   early: collector.EarlyCollector | None = None) -> collector.Collected:
    """``collect`` (without rules, as stage 4 collects) for the files the cache does not hold, the
    rest from the cache; fresh results are stored per file."""
    if cache is None:
        return collector.collect(checkout, files, runner=runner, early=early)
    result = collector.Collected()
    missing = []
    for file in sorted(set(files)):
        found = cache.get(file)
        if found is None:
            missing.append(file)
            continue
        result.ids += found[0]
        if found[1] is not None:
            result.errors[file] = found[1]
    if missing:
        fresh = collector.collect(checkout, missing, runner=runner, early=early)
        by_file: dict[str, list[str]] = {file: [] for file in missing}
        for test_id in fresh.ids:
            by_file.setdefault(test_id.split("::", 1)[0], []).append(test_id)
        for file in missing:
            cache.put(file, by_file[file], fresh.errors.get(file))
        result.ids += fresh.ids
        result.errors.update(fresh.errors)
        result.returncode = fresh.returncode
    result.ids.sort()
    return result
