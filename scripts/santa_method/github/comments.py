"""One sticky pull-request comment, found again by a hidden marker.

Why a marker and not "the last comment by this token": the Actions token
cannot ask who it is (`GET /user` is refused to it), and a re-run must
update the comment it wrote before instead of adding another. The marker is
an HTML comment, invisible in the rendered thread.

Only the standard library is used: the Action runs this once per job, and a
REST client library would be one more thing to install and pin.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

# GitHub refuses comment bodies over 65,536 characters.
MAX_BODY = 65_536
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class GitHubError(Exception):
    """A REST call failed; `status` is the HTTP status (0 when unreachable)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def marker(key: str) -> str:
    return f"<!-- santa-method:{key} -->"


def fit(body: str, limit: int = MAX_BODY) -> str:
    """Cut a body to GitHub's limit, saying so, so a long report still posts."""
    if len(body) <= limit:
        return body
    note = "\n\n_The report was cut to fit a comment; the job summary holds all of it._\n"
    return body[: limit - len(note)] + note


@dataclass(frozen=True)
class Client:
    """The few calls the Action makes, against `api_url` (GITHUB_API_URL)."""

    api_url: str
    token: str
    timeout: float = 30.0

    def _call(self, method: str, url: str, payload: dict[str, Any] | None = None) -> Any:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "santa-method-action")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
                link = response.headers.get("Link", "")
        except urllib.error.HTTPError as e:
            raise GitHubError(f"{method} {url} answered {e.code} {e.reason}", e.code) from None
        except (urllib.error.URLError, OSError) as e:
            raise GitHubError(f"cannot reach {self.api_url}: {e}") from None
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            raise GitHubError(f"{method} {url} answered something that is not JSON") from None
        return parsed, link

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        url: str | None = f"{self.api_url}/repos/{repo}/issues/{number}/comments?per_page=100"
        found: list[dict[str, Any]] = []
        while url:
            page, link = self._call("GET", url)
            if not isinstance(page, list):
                raise GitHubError(f"GET {url} answered something that is not a list")
            found.extend(c for c in page if isinstance(c, dict))
            match = _NEXT.search(link)
            url = match.group(1) if match else None
        return found

    def upsert(self, repo: str, number: int, key: str, body: str) -> tuple[str, int]:
        """Update the comment holding `key`'s marker, or create it: ("updated"|"created", id)."""
        tag = marker(key)
        text = fit(f"{tag}\n{body}")
        mine = [c for c in self.comments(repo, number) if tag in str(c.get("body", ""))]
        if mine:
            comment_id = int(mine[-1]["id"])
            self._call(
                "PATCH", f"{self.api_url}/repos/{repo}/issues/comments/{comment_id}", {"body": text}
            )
            return "updated", comment_id
        created, _ = self._call(
            "POST", f"{self.api_url}/repos/{repo}/issues/{number}/comments", {"body": text}
        )
        return "created", int(created["id"]) if isinstance(created, dict) else 0
