"""An upstream that is a git repository on disk: a user's checkout or our cached clone.

Blobs are read through GitPython's persistent ``git cat-file --batch`` process, so a
release-sized diff costs a handful of processes, not one per file.
"""
from __future__ import annotations

import hashlib
import pickle
import posixpath
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

import git

from selector.cache_dirs import mark_used
from selector.hunks import Hunk, parse_diff
from selector.inventory.cache import load_pickle, store_pickled
from selector.upstream.base import ChangedFile, UpstreamError, UpstreamSource
from selector.upstream.refs import looks_like_sha, pr_number, spellings, unknown_ref

SYMLINK_MODE = "120000"
# Named, not left to the user's `diff.algorithm`: hunks are kept per pair of commits and must not
# change with a setting between runs (or differ between two machines' answers for the same pair).
DIFF_ALGORITHM = "--diff-algorithm=myers"
FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_STATUS = {"A": "added", "D": "deleted", "M": "modified", "R": "renamed", "C": "copied", "T": "type_changed"}


class GitUpstream(UpstreamSource):
    def __init__(self, path: Path, *, cache_dir: Path, remote: str | None = None,
                 fetch_error: str | None = None) -> None:
        try:
            self.repo = git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise UpstreamError(f"{path} is not a git repository; pass a git checkout, "
                                "a git URL or github:OWNER/REPO as --upstream") from None
        self.path = Path(path).resolve()
        self.cache_dir = Path(cache_dir).resolve()  # git runs in the repository: relative paths would land there
        self.remote = remote  # URL we cloned from, when this is our cache
        self.fetch_error = fetch_error  # set when refreshing the cache failed (offline)
        self.description = remote or str(path)
        self._trees: dict[str, dict[str, tuple[str, str]]] = {}

    # refs -----------------------------------------------------------------
    def resolve(self, ref: str) -> str:
        ref = ref.strip()
        if not ref:
            raise UpstreamError("empty ref; use a tag, a branch, a SHA, X.Y or pr/NUMBER")
        number = pr_number(ref)
        if number is not None:
            names = [f"refs/pull/{number}/head", f"refs/heads/pr/{number}", f"refs/remotes/origin/pr/{number}"]
            if self.remote:
                self._fetch_pull(number)
        else:
            names = []
            for spelled in spellings(ref):
                names += [f"refs/tags/{spelled}", f"refs/heads/{spelled}", f"refs/remotes/origin/{spelled}"]
            if looks_like_sha(ref):
                names.append(ref)
        for name in names:
            sha = self._rev_parse(name)
            if sha:
                return sha
        error = unknown_ref(ref, self._known_refs(), self.description)
        if self.fetch_error:
            error = UpstreamError(f"{error} (the cached clone could not be refreshed: {self.fetch_error})")
        raise error

    def _rev_parse(self, name: str) -> str | None:
        try:
            return self.repo.git.rev_parse("--verify", "--quiet", f"{name}^{{commit}}").strip() or None
        except git.GitCommandError:
            return None

    def _known_refs(self) -> list[str]:
        out = self.repo.git.for_each_ref("--format=%(refname:short)", "refs/heads", "refs/tags", "refs/remotes")
        return [line.removeprefix("origin/") for line in out.splitlines() if line and not line.endswith("/HEAD")]

    def _fetch_pull(self, number: int) -> None:
        try:
            self.repo.git.fetch("origin", f"+refs/pull/{number}/head:refs/pull/{number}/head")
        except git.GitCommandError:
            pass  # reported as an unknown ref with close matches

    # trees and blobs ------------------------------------------------------
    def _tree(self, sha: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) for every file at ``sha`` (one ``git ls-tree`` per commit)."""
        if sha not in self._trees:
            out = self.repo.git.ls_tree("-r", "-z", "--full-tree", sha)
            entries: dict[str, tuple[str, str]] = {}
            for record in out.split("\0"):
                if not record:
                    continue
                meta, path = record.split("\t", 1)
                mode, kind, oid = meta.split()
                if kind == "blob":
                    entries[path] = (mode, oid)
            self._trees[sha] = entries
        return self._trees[sha]

    def list_files(self, sha: str) -> list[str]:
        return sorted(self._tree(sha))

    def blob_id(self, sha: str, path: str) -> str | None:
        """The blob holding ``path`` at ``sha`` (None for symlinks: their content is the target's)."""
        entry = self._tree(sha).get(path)
        return entry[1] if entry and entry[0] != SYMLINK_MODE else None

    def is_symlink(self, sha: str, path: str) -> bool:
        entry = self._tree(sha).get(path)
        return bool(entry and entry[0] == SYMLINK_MODE)

    def read_bytes(self, sha: str, path: str) -> bytes | None:
        tree = self._tree(sha)
        for _ in range(8):  # follow symlinks inside the tree, a few levels deep
            entry = tree.get(path)
            if entry is None:
                return None
            mode, oid = entry
            data = self.repo.git.get_object_data(oid)[3]
            if mode != SYMLINK_MODE:
                return data
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), data.decode()))
        return None

    def read_file(self, sha: str, path: str) -> str | None:
        return _text(self.read_bytes(sha, path))

    def read_files(self, sha: str, paths: list[str]) -> dict[str, str | None]:
        """Regular files through one ``git cat-file --batch`` fed every blob id at once (a round trip
        per blob costs more than the reading once a release's 500 test files are asked for);
        symlinks, and blobs that process does not find, one by one as ``read_file`` reads them."""
        self.prefetch(sha, paths)
        tree = self._tree(sha)
        oids = {p: tree[p][1] for p in paths if p in tree and tree[p][0] != SYMLINK_MODE}
        blobs = self._cat_blobs(sorted(set(oids.values()))) if len(oids) > 1 else {}
        return {path: _text(blobs[oids[path]]) if oids.get(path) in blobs else self.read_file(sha, path)
                for path in paths}

    def _cat_blobs(self, oids: list[str]) -> dict[str, bytes]:
        """The content of each blob id the repository has (absent ones are left out)."""
        done = subprocess.run(["git", "-C", str(self.path), "cat-file", "--batch"], capture_output=True,
                              input="".join(f"{oid}\n" for oid in oids).encode())
        out, data, at = {}, done.stdout, 0
        for oid in oids if done.returncode == 0 else []:
            end = data.index(b"\n", at)
            header = data[at:end].split()
            at = end + 1
            if len(header) != 3 or header[1] != b"blob":  # "<oid> missing": the object is absent
                continue
            size = int(header[2])
            out[oid] = data[at:at + size]
            at += size + 1  # the content is followed by a newline
        return out

    def prefetch(self, sha: str, paths: list[str]) -> None:
        """In a blobless clone, fetch the blobs we are about to read in one request."""
        if not self.remote:
            return
        tree = self._tree(sha)
        oids = [tree[p][1] for p in paths if p in tree]
        if not oids:
            return
        missing = {line[1:] for line in self.repo.git.rev_list("--objects", "--missing=print", sha).splitlines()
                   if line.startswith("?")}  # lists absent blobs without fetching them one by one
        wanted = [oid for oid in oids if oid in missing]
        if wanted:
            subprocess.run(
                ["git", "-C", str(self.path), "-c", "fetch.negotiationAlgorithm=noop", "fetch", "origin",
                 "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin"],
                input="\n".join(wanted) + "\n", capture_output=True, text=True)

    # diffs ----------------------------------------------------------------
    def changed_files(self, a_sha: str, b_sha: str) -> list[ChangedFile]:
        pair = self._pair_file("changed", a_sha, b_sha, [])
        kept = _load(pair)
        if kept is None:
            kept = self._changed_files(a_sha, b_sha)
            _store(pair, kept)
        return kept

    def _changed_files(self, a_sha: str, b_sha: str) -> list[ChangedFile]:
        # both passes detect renames (seconds on a release): git runs them side by side
        numstat = self._start("diff", "--numstat", "-z", "-M", "--no-ext-diff", DIFF_ALGORITHM, a_sha, b_sha)
        out = self.repo.git.diff("--raw", "-z", "-M", "--no-abbrev", "--no-ext-diff", a_sha, b_sha)
        binary = _binary_paths(self._finish(numstat))
        fields = out.split("\0")
        changes: list[ChangedFile] = []
        i = 0
        while i < len(fields):
            meta = fields[i]
            if not meta.startswith(":"):
                i += 1
                continue
            old_mode, new_mode, _old, _new, status = meta[1:].split()
            letter = status[0]
            if letter in "RC":
                old_path, path = fields[i + 1], fields[i + 2]
                i += 3
            else:
                old_path, path = None, fields[i + 1]
                i += 2
            changes.append(ChangedFile(path=path, status=_STATUS.get(letter, "modified"), old_path=old_path,
                                       old_mode=None if old_mode == "000000" else old_mode,
                                       new_mode=None if new_mode == "000000" else new_mode,
                                       binary=path in binary))
        return changes

    def _start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(["git", "-C", str(self.path), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, encoding="utf-8", errors="surrogateescape")

    def _finish(self, process: subprocess.Popen) -> str:
        out, err = process.communicate()
        if process.returncode:
            raise git.GitCommandError(process.args, process.returncode, err)
        return out

    def diff_hunks(self, a_sha: str, b_sha: str, paths: list[str]) -> dict[str, list[Hunk]]:
        """The hunks of every path (or pathspec such as ``*.py``) in one ``git diff -U0``."""
        return self.start_diff_hunks(a_sha, b_sha, paths)()

    def start_diff_hunks(self, a_sha: str, b_sha: str, paths: list[str]) -> Callable[[], dict[str, list[Hunk]]]:
        """``diff_hunks`` started now, collected by calling the result: git writes to a temporary file
        (not a pipe it would stall on) while stage 1 scans."""
        if not paths:
            return dict
        pair = self._pair_file("hunks", a_sha, b_sha, paths)
        kept = _load(pair)
        if kept is not None:
            return lambda: kept
        out = tempfile.TemporaryFile()
        process = subprocess.Popen(["git", "-C", str(self.path), "diff", "-U0", "-M", "--no-color", "--no-ext-diff",
                                    DIFF_ALGORITHM,
                                    a_sha, b_sha, "--", *paths], stdout=out, stderr=subprocess.PIPE)

        def collect() -> dict[str, list[Hunk]]:
            with out:
                _, err = process.communicate()
                if process.returncode:
                    raise git.GitCommandError(process.args, process.returncode, err)
                out.seek(0)
                found = parse_diff(out.read().decode("utf-8", "surrogateescape"))  # as GitPython decodes
            _store(pair, found)
            return found
        return collect

    def _pair_file(self, what: str, a_sha: str, b_sha: str, paths: list[str]) -> Path | None:
        """Where a diff between two commits is kept. Commits never change, so neither does their
        diff: one file per ref pair (and path list) lets a second run on the same refs start no
        ``git diff``, whose rename detection costs about a second on a release. Keyed by the code
        that makes the result too. None for anything but two full commit ids (a branch moves)."""
        if not (FULL_SHA.fullmatch(a_sha) and FULL_SHA.fullmatch(b_sha)):
            return None
        key = hashlib.blake2b("\0".join([what, a_sha, b_sha, *paths]).encode("utf-8", "surrogateescape"),
                              digest_size=12).hexdigest()
        mark_used(self.cache_dir / "diffs" / DIFF_CODE_VERSION)
        return self.cache_dir / "diffs" / DIFF_CODE_VERSION / f"{a_sha[:12]}-{b_sha[:12]}-{what}-{key}.pickle"

    # working trees --------------------------------------------------------
    def checkout(self, sha: str) -> Path:
        key = hashlib.sha1(str(self.path.resolve()).encode()).hexdigest()[:10]
        target = self.cache_dir / "worktrees" / f"{self.path.name}-{key}" / sha[:12]
        if (target / ".git").exists():
            try:
                if git.Repo(target).head.commit.hexsha == sha:
                    mark_used(target)
                    return target
            except (git.InvalidGitRepositoryError, ValueError):
                pass
            shutil.rmtree(target, ignore_errors=True)
        self.repo.git.worktree("prune")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.repo.git.worktree("add", "--detach", "--force", str(target), sha)
        except git.GitCommandError as exc:
            raise UpstreamError(f"cannot check out {sha[:12]} into {target}: {_first_line(exc)}") from None
        return target

    def close(self) -> None:
        self.repo.close()


def _code_version() -> str:
    """Changes whenever the code that makes a kept diff does (this module, the hunk parser)."""
    here = Path(__file__).resolve()
    data = here.read_bytes() + (here.parents[1] / "hunks.py").read_bytes()
    return hashlib.blake2b(data, digest_size=6).hexdigest()


DIFF_CODE_VERSION = _code_version()


def _load(path: Path | None):
    return None if path is None else load_pickle(path)


def _store(path: Path | None, value) -> None:
    if path is None:
        return
    try:
        store_pickled(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass  # a read-only cache dir: the diff is simply not kept


def _text(data: bytes | None) -> str | None:
    """A blob's text; None when missing or binary (a NUL in its first 8 KiB)."""
    if data is None or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _binary_paths(out: str) -> set[str]:
    """Paths git's ``diff --numstat -z`` reports as binary ("-\t-")."""
    fields, found, i = out.split("\0"), set(), 0
    while i < len(fields):
        record = fields[i]
        if not record:
            i += 1
            continue
        added, deleted, path = record.split("\t", 2)
        if path == "":  # a rename: old and new path follow
            path = fields[i + 2]
            i += 3
        else:
            i += 1
        if added == "-" and deleted == "-":
            found.add(path)
    return found


def _first_line(exc: git.GitCommandError) -> str:
    text = (exc.stderr or str(exc)).strip().replace("stderr:", "").strip(" '\n")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else str(exc)
