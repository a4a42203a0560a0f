"""Clone a URL once into the cache (blobless partial clone) and refresh it on later runs."""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import git

from selector.upstream.base import UpstreamError
from selector.upstream.git_source import _first_line

FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


def clone_dir(url: str, cache_dir: Path) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", url.rstrip("/").rsplit("/", 1)[-1]).removesuffix(".git") or "upstream"
    return Path(cache_dir).resolve() / "upstream" / f"{slug}-{hashlib.sha1(url.encode()).hexdigest()[:10]}.git"


def cached_clone(url: str, cache_dir: Path) -> tuple[Path, str | None]:
    """The cached clone of ``url`` and, if refreshing it failed, why (we then work from the cache)."""
    dest = clone_dir(url, cache_dir)
    if (dest / "HEAD").exists():
        repo = git.Repo(dest)
        try:
            repo.git.fetch("origin", "--prune", "--filter=blob:none", *FETCH_REFSPECS)
            return dest, None
        except git.GitCommandError as exc:
            return dest, _first_line(exc)
        finally:
            repo.close()
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        repo = git.Repo.clone_from(url, partial, bare=True, multi_options=["--filter=blob:none"])
    except git.GitCommandError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise UpstreamError(
            f"cannot clone {url} into {dest.parent}: {_first_line(exc)}; check the network, "
            "or clone it yourself and pass the local checkout with --upstream PATH") from None
    with repo.config_writer() as config:
        config.set_value('remote "origin"', "fetch", FETCH_REFSPECS[0])
    repo.close()
    partial.rename(dest)
    return dest, None
