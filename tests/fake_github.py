"""A fake of the few GitHub REST calls the Action makes, on loopback.

It keeps issue comments in memory, pages them as GitHub does (a `Link`
header with rel="next"), checks the token, and can be told to refuse writes
(403), as GitHub does for a fork's read-only token.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

_LIST = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
_ONE = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")


@dataclass
class FakeGitHub:
    token: str
    read_only: bool = False
    page_size: int = 2
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    _next_id: int = 1000

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                fake.requests.append((method, self.path))
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    self._send(401, {"message": "Bad credentials"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length)) if length else None
                url = urlparse(self.path)
                if match := _LIST.match(url.path):
                    key = (match.group(1), int(match.group(2)))
                    if method == "GET":
                        self._list(key, url)
                        return
                    if method == "POST" and not fake.read_only:
                        fake._next_id += 1
                        comment = {"id": fake._next_id, "body": payload["body"]}
                        fake.comments.setdefault(key, []).append(comment)
                        self._send(201, comment)
                        return
                if (match := _ONE.match(url.path)) and method == "PATCH" and not fake.read_only:
                    for thread in fake.comments.values():
                        for comment in thread:
                            if comment["id"] == int(match.group(2)):
                                comment["body"] = payload["body"]
                                self._send(200, comment)
                                return
                    self._send(404, {"message": "Not Found"})
                    return
                self._send(403, {"message": "Resource not accessible by integration"})

            def _list(self, key: tuple[str, int], url: Any) -> None:
                page = int(parse_qs(url.query).get("page", ["1"])[0])
                thread = fake.comments.get(key, [])
                start = (page - 1) * fake.page_size
                headers = {}
                if start + fake.page_size < len(thread):
                    base = f"http://{self.headers['Host']}{url.path}"
                    headers["Link"] = f'<{base}?per_page=100&page={page + 1}>; rel="next"'
                self._send(200, thread[start : start + fake.page_size], headers)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
