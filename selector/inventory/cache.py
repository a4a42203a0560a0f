"""Analysis results kept on disk by git blob id, so a second run on the same refs rescans nothing.

A blob id names a file's exact content; with the path (module names depend on it) and the
analyser's own source digest it is a key that can never go stale.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

from selector.cache_dirs import mark_used

HERE = Path(__file__).resolve().parent
# every module whose results are cached: opinfo (OpInfo scans), native_yaml and yaml_items (YAML entries), op_sources
# (op source scans), data_files (data-file verdicts), op_impact and reach (tests naming an op), analyse
# (which files name a changed data file)
ANALYSER_SOURCES = ("inventory/scan.py", "inventory/reuse.py", "inventory/model.py", "changes/opinfo.py", "changes/native_yaml.py",
                    "changes/yaml_items.py", "changes/op_sources.py", "changes/data_files.py", "changes/op_impact.py",
                    "changes/reach.py", "changes/analyse.py")


def analyser_version() -> str:
    """Changes whenever the analysing code does, so cached results never outlive it."""
    root = HERE.parent
    data = b"".join((root / name).read_bytes() for name in ANALYSER_SOURCES)
    return hashlib.blake2b(data, digest_size=6).hexdigest()


class BlobCache:
    def __init__(self, cache_dir: Path | str) -> None:
        self.root = Path(cache_dir) / "inventory" / analyser_version()
        mark_used(self.root)

    def path(self, kind: str, blob: str, path: str) -> Path:
        key = hashlib.blake2b(f"{kind}:{blob}:{path}".encode(), digest_size=10).hexdigest()
        return self.root / key[:2] / f"{key}.pickle"

    def get(self, kind: str, blob: str, path: str):
        return load_pickle(self.path(kind, blob, path))

    def put(self, kind: str, blob: str, path: str, value) -> None:
        store_pickled(self.path(kind, blob, path), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def load_pickle(path: Path):
    """What a cache file holds; None when it is absent or damaged (computed again then)."""
    try:
        return pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def store_pickled(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(data)
    temporary.replace(target)  # atomic: parallel runs never read half a file


def open_cache(source, cache_dir: Path | str | None) -> BlobCache | None:
    """A cache only for sources that name blobs (git); others rescan every time."""
    if cache_dir is None or getattr(source, "blob_id", None) is None:
        return None
    return BlobCache(cache_dir)


def cached(cache: BlobCache | None, source, sha: str, kind: str, path: str, compute):
    """``compute()`` for ``path`` at ``sha``, through the cache when the source names the blob."""
    blob = source.blob_id(sha, path) if cache is not None else None
    return compute() if blob is None else cached_key(cache, kind, blob, path, compute)


def cached_key(cache: BlobCache | None, kind: str, key: str, name: str, compute):
    """``compute()`` kept under a key that names content (a blob or commit id), when there is a cache."""
    if cache is None:
        return compute()
    value = cache.get(kind, key, name)
    if value is None:
        value = compute()
        cache.put(kind, key, name, value)
    return value


def cached_change(cache: BlobCache | None, source, kind: str, before: tuple[str, str], after: tuple[str, str], compute):
    """``compute()`` for a verdict on two versions of a file (``(sha, path)`` each), through the cache
    under both blob ids when the source names them."""
    blobs = [source.blob_id(sha, path) for sha, path in (before, after)] if cache is not None else [None]
    return compute() if None in blobs else cached_key(cache, kind, "..".join(blobs), after[1], compute)
