"""A fake Hugging Face Hub backed by a local folder, for offline tests of ``hf://`` paths.

It serves the endpoints ``huggingface_hub`` calls to list, download and upload files of
dataset repositories (read from its source):

    POST /api/repos/create                                  create_repo
    GET  /api/datasets/OWNER/NAME/revision/REV              repo_info
    GET  /api/datasets/OWNER/NAME/tree/REV[/PATH]           list_repo_tree (one page)
    HEAD|GET /datasets/OWNER/NAME/resolve/REV/PATH          hf_hub_download
    POST /api/datasets/OWNER/NAME/preupload/REV             create_commit: every file "regular"
    POST /api/datasets/OWNER/NAME/commit/REV                create_commit: NDJSON, base64 files
    POST /api/validate-yaml                                 a README.md's front matter: YAML?

Repository ``OWNER/NAME`` is the folder ``root/OWNER/NAME``; each commit bumps a counter
whose SHA-1 is the commit id. Only the default branch (``main``) exists. Every request is
logged as ``(method, path)`` in :attr:`FakeHubServer.requests`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

_REPO = r"(?P<repo>[\w.-]+/[\w.-]+)"
_ROUTES = {
    "tree": re.compile(rf"/api/datasets/{_REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?"),
    "info": re.compile(rf"/api/datasets/{_REPO}/revision/(?P<rev>[^/]+)"),
    "resolve": re.compile(rf"/datasets/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"),
    "preupload": re.compile(rf"/api/datasets/{_REPO}/preupload/(?P<rev>[^/]+)"),
    "commit": re.compile(rf"/api/datasets/{_REPO}/commit/(?P<rev>[^/]+)"),
}


class FakeHubServer:
    """``with FakeHubServer(root) as hub:`` then ``HF_ENDPOINT=hub.url``."""

    def __init__(self, root: str | Path, host: str = "127.0.0.1") -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.requests: list[tuple[str, str]] = []
        self.commits: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeHubServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- repository state ------------------------------------------------------------------

    def repo_dir(self, repo: str) -> Path:
        return self.root / repo

    def sha(self, repo: str) -> str:
        return hashlib.sha1(f"{repo}#{self.commits.get(repo, 0)}".encode()).hexdigest()

    def files(self, repo: str) -> list[Path]:
        base = self.repo_dir(repo)
        return sorted(p for p in base.rglob("*") if p.is_file())

    def add_file(self, repo: str, path: str, content: bytes) -> None:
        """Put a file in a repository directly (one commit), creating the repository."""
        target = self.repo_dir(repo) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        with self._lock:
            self.commits[repo] = self.commits.get(repo, 0) + 1


def _handler(hub: FakeHubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(
            self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
            *, head: bool = False,
        ) -> None:  # fmt: skip
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(data).encode()
            self._send(status, body, {"Content-Type": "application/json", **(headers or {})})

        def _missing(self, code: str, message: str, *, head: bool = False) -> None:
            headers = {"X-Error-Code": code, "X-Error-Message": message}
            if head:
                self._send(404, b"", headers, head=True)
            else:
                self._json(404, {"error": message}, headers)

        def _route(self) -> tuple[str, dict[str, str]] | None:
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path))
            for name, pattern in _ROUTES.items():
                match = pattern.fullmatch(path)
                if match:
                    return name, {k: v or "" for k, v in match.groupdict().items()}
            return None

        def _known(self, repo: str, rev: str, *, head: bool = False) -> bool:
            if not hub.repo_dir(repo).is_dir():
                self._missing("RepoNotFound", "Repository not found", head=head)
                return False
            if rev not in ("main", hub.sha(repo)):
                self._missing("RevisionNotFound", "Invalid rev id", head=head)
                return False
            return True

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_HEAD(self) -> None:
            self._get(head=True)

        def do_GET(self) -> None:
            self._get(head=False)

        def _get(self, *, head: bool) -> None:
            route = self._route()
            if route is None:
                self._missing("NotFound", "no such route", head=head)
                return
            name, args = route
            repo, rev = args["repo"], args["rev"]
            if not self._known(repo, rev, head=head):
                return
            base = hub.repo_dir(repo)
            if name == "resolve":
                target = base / args["path"]
                if not target.is_file():
                    self._missing("EntryNotFound", "Entry not found", head=head)
                    return
                data = target.read_bytes()
                etag = hashlib.sha1(data).hexdigest()
                headers = {"X-Repo-Commit": hub.sha(repo), "ETag": f'"{etag}"',
                           "Content-Type": "application/octet-stream"}  # fmt: skip
                self._send(200, data, headers, head=head)
            elif name == "tree":
                prefix = args["path"].strip("/")
                entries = []
                for file in hub.files(repo):
                    rel = file.relative_to(base).as_posix()
                    if prefix and not rel.startswith(prefix + "/"):
                        continue
                    data = file.read_bytes()
                    entries.append({"type": "file", "path": rel, "size": len(data),
                                    "oid": hashlib.sha1(data).hexdigest()})  # fmt: skip
                self._json(200, entries)
            else:  # info
                siblings = [{"rfilename": f.relative_to(base).as_posix()} for f in hub.files(repo)]
                self._json(200, {"id": repo, "sha": hub.sha(repo), "private": False,
                                 "siblings": siblings})  # fmt: skip

        def do_POST(self) -> None:
            path = unquote(urlsplit(self.path).path)
            body = self._body()
            if path == "/api/validate-yaml":  # the real Hub checks a card's metadata too
                hub.requests.append(("POST", path))
                content = json.loads(body or b"{}").get("content", "")
                front = content.split("---")[1] if content.startswith("---") else ""
                try:
                    import yaml

                    yaml.safe_load(front)
                except yaml.YAMLError as exc:
                    self._json(400, {"error": f"invalid YAML in the card: {exc}"})
                    return
                self._json(200, {"errors": [], "warnings": []})
                return
            if path == "/api/repos/create":
                hub.requests.append(("POST", path))
                payload = json.loads(body or b"{}")
                repo = f"{payload.get('organization')}/{payload['name']}"
                if payload.get("type") != "dataset":
                    self._json(400, {"error": "this fake Hub holds dataset repositories only"})
                    return
                existed = hub.repo_dir(repo).is_dir()
                hub.repo_dir(repo).mkdir(parents=True, exist_ok=True)
                status = 409 if existed else 200
                self._json(status, {"url": f"{hub.url}/datasets/{repo}", "error": "exists"})
                return
            route = self._route()
            if route is None or route[0] not in ("preupload", "commit"):
                self._missing("NotFound", "no such route")
                return
            name, args = route
            repo = args["repo"]
            if not self._known(repo, args["rev"]):
                return
            if name == "preupload":
                files = json.loads(body)["files"]
                self._json(200, {"files": [
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                    for f in files
                ]})  # fmt: skip
                return
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            for line in lines:
                value = line.get("value", {})
                if line.get("key") == "file":
                    target = hub.repo_dir(repo) / value["path"]
                    if ".." in Path(value["path"]).parts:
                        self._json(400, {"error": "bad path"})
                        return
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(base64.b64decode(value["content"]))
                elif line.get("key") not in ("header",):
                    self._json(400, {"error": f"unsupported commit line {line.get('key')}"})
                    return
            with hub._lock:
                hub.commits[repo] = hub.commits.get(repo, 0) + 1
            sha = hub.sha(repo)
            self._json(200, {"commitUrl": f"{hub.url}/datasets/{repo}/commit/{sha}",
                             "commitOid": sha, "pullRequestUrl": None})  # fmt: skip

    return Handler
