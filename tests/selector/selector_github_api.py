"""A local HTTP server speaking the parts of GitHub's REST API the compare source uses.

It answers from a real git repository, so PyGithub (pointed at it with base_url) sees the
same commits, trees, contents and compare results GitHub would give for that history.
"""
from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

import git

STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "T": "changed"}
COMPARE_FILES_LIMIT = 300  # GitHub's compare lists at most this many files


class FakeGitHub:
    def __init__(self, repo_path, full_name: str = "pytorch/pytorch") -> None:
        self.repo = git.Repo(repo_path)
        self.full_name = full_name
        self.requests: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _sha(self, ref: str) -> str | None:
        try:
            return self.repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
        except git.GitCommandError:
            return None

    def answer(self, path: str, query: dict) -> tuple[int, object]:
        api_root = self.url + ("/api/v3" if path.startswith("/api/v3/") else "")  # GitHub Enterprise layout
        path = path.removeprefix("/api/v3")
        prefix = f"/repos/{self.full_name}"
        repo_url = api_root + prefix
        if path == prefix:
            owner, name = self.full_name.split("/")
            return 200, {"id": 1, "name": name, "full_name": self.full_name, "owner": {"login": owner},
                         "url": repo_url, "default_branch": "main"}
        if not path.startswith(prefix + "/"):
            return 404, {"message": "Not Found"}
        rest = path[len(prefix) + 1:]
        kind, _, arg = rest.partition("/")
        arg = unquote(arg)
        if kind == "commits":
            sha = self._sha(arg)
            if sha is None:
                return 422, {"message": f"No commit found for SHA: {arg}"}
            return 200, {"sha": sha, "url": f"{repo_url}/commits/{sha}", "commit": {"message": "m"}}
        if kind == "compare":
            base, head = (self._sha(x) for x in arg.split("..."))
            if not base or not head:
                return 404, {"message": "Not Found"}
            files = []
            out = self.repo.git.diff("--name-status", "-M", base, head)
            for line in out.splitlines():
                parts = line.split("\t")
                entry = {"filename": parts[-1], "status": STATUS[parts[0][0]], "sha": "0" * 40}
                if parts[0].startswith("R"):
                    entry["previous_filename"] = parts[1]
                files.append(entry)
            files = files[:COMPARE_FILES_LIMIT]
            return 200, {"status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
                         "url": f"{repo_url}/compare/{arg}", "commits": [], "files": files}
        if kind == "contents":
            sha = self._sha(query.get("ref", ["HEAD"])[0])
            try:
                data = self.repo.git.execute(["git", "show", f"{sha}:{arg}"], stdout_as_string=False)
            except git.GitCommandError:
                return 404, {"message": "Not Found"}
            return 200, {"type": "file", "encoding": "base64", "name": arg.rsplit("/", 1)[-1], "path": arg,
                         "sha": "0" * 40, "size": len(data), "content": base64.b64encode(data).decode()}
        if kind == "git" and arg.startswith("trees/"):
            sha = self._sha(arg[len("trees/"):])
            entries = [line.split("\t", 1) for line in self.repo.git.ls_tree("-r", sha).splitlines()]
            return 200, {"sha": sha, "url": f"{repo_url}/git/trees/{sha}", "truncated": False,
                         "tree": [{"path": path, "type": "blob", "mode": meta.split()[0], "sha": meta.split()[2]}
                                  for meta, path in entries]}
        if kind == "pulls":
            sha = self._sha(f"refs/pull/{arg}/head")
            if sha is None:
                return 404, {"message": "Not Found"}
            return 200, {"number": int(arg), "url": f"{repo_url}/pulls/{arg}", "head": {"sha": sha, "ref": "feature"},
                         "base": {"sha": sha, "ref": "main"}}
        if kind == "tags":
            return 200, [{"name": t.name, "commit": {"sha": t.commit.hexsha}} for t in self.repo.tags]
        if kind == "branches":
            return 200, [{"name": h.name, "commit": {"sha": h.commit.hexsha}} for h in self.repo.heads]
        return 404, {"message": "Not Found"}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server naming)
                parsed = urlparse(self.path)
                fake.requests.append(parsed.path)
                status, body = fake.answer(parsed.path, parse_qs(parsed.query))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler
