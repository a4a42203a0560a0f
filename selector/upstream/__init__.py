"""Upstream sources: where the PyTorch history the selector diffs comes from.

``open_upstream(spec, cache_dir=...)`` accepts a local checkout path, a git URL (cloned
once into the cache as a blobless partial clone) or ``github:OWNER/REPO`` (the GitHub
compare API through PyGithub). See docs/upstream.md.
"""
from __future__ import annotations

import re
from pathlib import Path

from selector.upstream.base import ChangedFile, UpstreamError, UpstreamSource

__all__ = ["ChangedFile", "UpstreamError", "UpstreamSource", "open_upstream"]

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@[^:]+:)", re.IGNORECASE)
_GITHUB = re.compile(r"^github:(?P<name>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)$")


def open_upstream(spec: str, *, cache_dir: Path, github_token: str | None = None,
                  github_api_url: str = "https://api.github.com") -> UpstreamSource:
    """Open ``spec``: a local path, a URL, or ``github:owner/repo``."""
    from selector.upstream.git_source import GitUpstream

    spec = str(spec).strip()
    if not spec:
        raise UpstreamError("no upstream given; pass --upstream PATH|URL|github:OWNER/REPO or set RELAY_UPSTREAM")
    found = _GITHUB.match(spec)
    if found:
        from selector.upstream.github_source import GitHubUpstream
        return GitHubUpstream(found["name"], token=github_token, api_url=github_api_url)
    if spec.startswith("github:"):
        raise UpstreamError(f"'{spec}' is not of the form github:OWNER/REPO")
    if _URL.match(spec):
        from selector.upstream.clone import cached_clone
        path, fetch_error = cached_clone(spec, Path(cache_dir))
        return GitUpstream(path, cache_dir=Path(cache_dir), remote=spec, fetch_error=fetch_error)
    local = Path(spec).expanduser()
    if not local.exists():
        raise UpstreamError(f"upstream path {local} does not exist; pass a git checkout, a git URL "
                            "or github:OWNER/REPO")
    return GitUpstream(local, cache_dir=Path(cache_dir))
