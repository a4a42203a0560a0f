"""An upstream read through the GitHub REST API (compare, contents, trees) with PyGithub.

For PR events when no clone is wanted. ``github_api_url`` points at GitHub Enterprise
(``https://HOST/api/v3``) or, in tests, at a local server speaking the same API.
"""
from __future__ import annotations

import base64

from github import Auth, Github, GithubException, UnknownObjectException

from selector.upstream.base import ChangedFile, UpstreamError, UpstreamSource
from selector.upstream.refs import pr_number, spellings, unknown_ref

COMPARE_FILES_LIMIT = 300  # GitHub's compare lists at most this many changed files
_STATUS = {"added": "added", "removed": "deleted", "modified": "modified", "renamed": "renamed",
           "copied": "copied", "changed": "modified", "unchanged": "modified"}


class GitHubUpstream(UpstreamSource):
    def __init__(self, full_name: str, *, token: str | None, api_url: str) -> None:
        auth = Auth.Token(token) if token else None
        self.github = Github(auth=auth, base_url=api_url.rstrip("/"), retry=None, timeout=30)
        self.full_name = full_name
        self.description = f"github:{full_name} ({api_url})"
        try:
            self.repo = self.github.get_repo(full_name)
        except GithubException as exc:
            raise UpstreamError(f"cannot open {self.description}: {_message(exc)}; check the name, "
                                "RELAY_GITHUB_TOKEN and RELAY_GITHUB_API_URL") from None
        except OSError as exc:
            raise UpstreamError(f"cannot reach {api_url}: {exc}; check the network or use a local checkout") from None
        self._trees: dict[str, dict[str, str]] = {}  # commit -> {path: blob sha}

    def resolve(self, ref: str) -> str:
        number = pr_number(ref)
        try:
            if number is not None:
                return self.repo.get_pull(number).head.sha
        except UnknownObjectException:
            raise UpstreamError(f"pull request {number} not found in {self.description}") from None
        for spelled in spellings(ref):
            try:
                return self.repo.get_commit(spelled).sha
            except (UnknownObjectException, GithubException) as exc:
                if getattr(exc, "status", 404) not in (404, 422):
                    raise UpstreamError(f"{self.description}: {_message(exc)}") from None
        known = [t.name for t in self.repo.get_tags()[:100]] + [b.name for b in self.repo.get_branches()[:100]]
        raise unknown_ref(ref, known, self.description)

    def read_file(self, sha: str, path: str) -> str | None:
        try:
            content = self.repo.get_contents(path, ref=sha)
        except UnknownObjectException:
            return None
        if isinstance(content, list):  # a directory
            return None
        data = base64.b64decode(content.content) if content.content else b""
        if b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")

    def list_files(self, sha: str) -> list[str]:
        return sorted(self._blobs(sha))

    def _blobs(self, sha: str) -> dict[str, str]:
        if sha not in self._trees:
            tree = self.repo.get_git_tree(sha, recursive=True)
            if tree.raw_data.get("truncated"):
                raise UpstreamError(f"{self.description}: the tree of {sha[:12]} is too large for the API "
                                    "(truncated); use a local checkout or a clone URL")
            self._trees[sha] = {e.path: e.sha for e in tree.tree if e.type == "blob"}
        return self._trees[sha]

    def changed_files(self, a_sha: str, b_sha: str) -> list[ChangedFile]:
        try:
            comparison = self.repo.compare(a_sha, b_sha)
        except GithubException as exc:
            raise UpstreamError(f"{self.description}: compare {a_sha[:12]}...{b_sha[:12]} failed: {_message(exc)}") from None
        files = comparison.files
        if len(files) >= COMPARE_FILES_LIMIT:  # the list is cut off: every file from the two trees
            return self._tree_diff(a_sha, b_sha)
        return [ChangedFile(path=f.filename, status=_STATUS.get(f.status, "modified"),
                            old_path=f.previous_filename if f.status in ("renamed", "copied") else None)
                for f in files]

    def _tree_diff(self, a_sha: str, b_sha: str) -> list[ChangedFile]:
        """Changed files by blob, from two recursive trees; a rename shows as a delete and an add."""
        old, new = self._blobs(a_sha), self._blobs(b_sha)
        changed = [ChangedFile(path=p, status="added" if p not in old else "modified")
                   for p in sorted(new) if old.get(p) != new[p]]
        return changed + [ChangedFile(path=p, status="deleted") for p in sorted(old) if p not in new]

    def close(self) -> None:
        self.github.close()


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    return f"HTTP {exc.status}: {data.get('message', exc.data)}"
