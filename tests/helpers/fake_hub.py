"""A Hugging Face Hub on 127.0.0.1 for tests: the endpoints ``hf_hub_download`` calls for one file.

``HEAD`` and ``GET /{org}/{name}/resolve/{revision}/{path}`` answer like the Hub: the file with
``X-Repo-Commit``, ``ETag`` and ``Content-Length``, or the Hub's status and ``X-Error-Code``
(``RepoNotFound``, ``GatedRepo``, ``RevisionNotFound``, ``EntryNotFound``). Repos are public,
private (a token required: 401 without it) or gated (401 without a token, 403 with one that was
not granted access); one repo can refuse every request with a bare 403. Every request is recorded.

A Hub that misbehaves, for the bounded waits (ffnlab.netwait): ``misbehave`` "stall" accepts the
connection and never answers, "status" answers ``status`` (e.g. 500) to everything, "stall-body"
answers a GET with its headers and half the file, then sends nothing more. A stalled request waits
until ``release()`` (call it before shutting the server down). More, for the third pass: "trickle"
sends a GET's file in ``chunks`` pieces ``gap`` seconds apart (a slow transfer that keeps moving),
"close-body" sends half the file and closes the connection, "headers-stall" sends the status line
and stalls before the headers end, "garbage" answers bytes that are not HTTP, "redirect-loop"
answers every request with a redirect to itself, "retry-after" answers ``status`` (429 by
default there) with a ``Retry-After`` of ``retry_after`` seconds ("get-retry-after": to a GET only,
the file's HEAD answered as usual), "bad-json" serves every file as
``{"model_type":`` (a truncated config.json). For the tenth pass: "no-length" answers a file
with no Content-Length (the body ends when the connection closes), "false-length" announces 100
bytes to a HEAD and sends a GET's whole file with no length; ``sent`` counts the body bytes the
server wrote, in 1 MiB pieces (what a client that stops reading leaves unsent is not counted).
For the tenth and twelfth: "redirect" answers every request with a 302 to ``location``; ``gzip``
sends every file gzip-encoded (``Content-Encoding: gzip``, the Content-Length the compressed
body's, or none under "no-length"), as ``sent`` then counts.
"""

from __future__ import annotations

import gzip as gzip_module
import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


def commit_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()  # 40 hex digits, like a git commit


@dataclass
class Repo:
    commits: dict[str, dict[str, bytes]]  # commit -> files
    refs: dict[str, str]  # branch or tag -> commit ("main" first)
    access: str = "public"  # public | private | gated | forbidden
    token: str | None = None  # the token that may read a private or gated repo

    def files_at(self, revision: str) -> tuple[str, dict[str, bytes]] | None:
        commit = self.refs.get(revision, revision)
        return (commit, self.commits[commit]) if commit in self.commits else None


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, token
    misbehave: str | None = None  # None | "stall" | "status" | "stall-body" | the third pass's (above)
    status: int = 500
    chunks: int = 6
    gap: float = 0.4
    retry_after: int = 100_000
    location: str | None = None  # where "redirect" sends every request
    gzip: bool = False  # files sent gzip-encoded
    sent: int = 0  # body bytes written to clients
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()

    def add(self, repo_id: str, revisions: dict[str, dict[str, bytes]], access: str = "public",
            token: str | None = None) -> dict[str, str]:
        """Add a repo whose refs (in order, the first is "main") hold these files; return ref -> commit."""
        commits = {commit_of(f"{repo_id}@{ref}"): files for ref, files in revisions.items()}
        refs = dict(zip(revisions, commits, strict=True))
        self.repos[repo_id] = Repo(commits, refs, access, token)
        return refs

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _send(self, status: int, headers: dict[str, str], content: bytes = b"", body: bool = False) -> None:
                self.send_response(status)
                if status == 200 and hub.gzip:
                    content, headers = gzip_module.compress(content, 1), {**headers, "Content-Encoding": "gzip"}
                length: str | None = str(len(content))
                if status == 200 and hub.misbehave in ("no-length", "false-length"):
                    length = "100" if hub.misbehave == "false-length" and not body else None
                    self.close_connection = True  # HTTP/1.0: the body ends with the connection
                for k, v in {**headers, **({"Content-Length": length} if length is not None else {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                if body and hub.misbehave == "stall-body" and status == 200:
                    self.wfile.write(content[: len(content) // 2])
                    self.wfile.flush()
                    hub.released.wait(600)
                elif body and hub.misbehave == "close-body" and status == 200:
                    self.wfile.write(content[: len(content) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                elif body and hub.misbehave == "trickle" and status == 200:
                    step = -(-len(content) // hub.chunks)
                    for start in range(0, len(content), step):
                        self.wfile.write(content[start:start + step])
                        self.wfile.flush()
                        if hub.released.wait(hub.gap):
                            break
                elif body:
                    try:
                        for start in range(0, len(content), 1 << 20):
                            self.wfile.write(content[start:start + (1 << 20)])
                            hub.sent += len(content[start:start + (1 << 20)])
                    except OSError:  # the client stopped reading
                        self.close_connection = True

            def _error(self, status: int, code: str | None, commit: str | None = None) -> None:
                headers = {"X-Error-Code": code} if code else {}
                if commit:
                    headers["X-Repo-Commit"] = commit
                self._send(status, headers)

            def _answer(self, body: bool) -> None:
                auth = self.headers.get("authorization") or ""
                token = auth.removeprefix("Bearer ") or None
                path = urlsplit(self.path).path
                hub.requests.append((self.command, path, token))
                if hub.misbehave == "stall":
                    hub.released.wait(600)
                    return None
                if hub.misbehave == "status":
                    return self._error(hub.status, None)
                if hub.misbehave == "retry-after" or hub.misbehave == "get-retry-after" and self.command == "GET":
                    return self._send(hub.status, {"Retry-After": str(hub.retry_after)})
                if hub.misbehave in ("redirect-loop", "redirect"):
                    return self._send(302, {"Location": hub.location if hub.misbehave == "redirect" else self.path})
                if hub.misbehave == "headers-stall":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Repo-Commit: ")
                    self.wfile.flush()
                    hub.released.wait(600)
                    return None
                if hub.misbehave == "garbage":
                    self.wfile.write(b"\x00\x01 this is not HTTP\r\n\r\n")
                    self.close_connection = True
                    return None
                parts = path.lstrip("/").split("/")
                if len(parts) < 5 or parts[2] != "resolve":
                    return self._error(404, None)
                repo = hub.repos.get(f"{parts[0]}/{parts[1]}")
                revision, filename = unquote(parts[3]), "/".join(parts[4:])
                if repo is None:
                    return self._error(401 if token is None else 404, "RepoNotFound")
                allowed = token is not None and token == repo.token
                if repo.access == "private" and not allowed:
                    return self._error(401, "RepoNotFound")
                if repo.access == "gated" and not allowed:
                    return self._error(401 if token is None else 403, "GatedRepo")
                if repo.access == "forbidden":
                    return self._error(403, None)
                found = repo.files_at(revision)
                if found is None:
                    return self._error(404, "RevisionNotFound")
                commit, files = found
                if filename not in files:
                    return self._error(404, "EntryNotFound", commit)
                content = files[filename] if hub.misbehave != "bad-json" else b'{"model_type":'
                etag = hashlib.sha256(content).hexdigest()
                self._send(200, {"X-Repo-Commit": commit, "ETag": f'"{etag}"'}, content, body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}"
