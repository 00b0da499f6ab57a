"""A stand-in for the Claude Code CLI that says what a test scripts, byte for byte.

claude-agent-sdk starts `cli_path` and speaks stream-json with it over stdin
and stdout: control requests (initialize first) that want a control
response, then the user's message. This script answers every control
request as the CLI does (or as the scene says), then, after the user's
message, writes the scene's lines to stdout exactly as given (so they may be
broken JSON, wrong types, missing fields), optionally spoils the fixer's
working copy, and exits with the scene's code. The scene is a JSON file
named by FAKE_CLAUDE_SCENE:

    {"lines": [str | object, ...], "exit": 0, "stderr": "",
     "init": "ok" | "error", "copy": null | "delete" | "<hex bytes>"}

In a line given as text, `@canary@` becomes the canary of the assignment
the SDK sent (so a scripted review can be a valid one).

Only the model's side is faked: the SDK, its process handling and its
message parser are the real ones.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


def main() -> int:
    scene = json.loads(Path(os.environ["FAKE_CLAUDE_SCENE"]).read_text(encoding="utf-8"))
    if "-v" in sys.argv[1:] or "--version" in sys.argv[1:]:
        print("2.1.999 (Claude Code)")
        return 0
    for raw in sys.stdin:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if message.get("type") == "control_request":
            request_id = message.get("request_id")
            if scene.get("init") == "error":
                response = {"subtype": "error", "request_id": request_id, "error": "init refused"}
            else:
                response = {"subtype": "success", "request_id": request_id, "response": {}}
            _write({"type": "control_response", "response": response})
            continue
        if message.get("type") == "user":
            prompt = json.dumps(message)
            _spoil_copy(scene.get("copy"), prompt)
            canary = re.search(r"santa-canary: ([0-9a-f]+)", prompt)
            for line in scene.get("lines", []):
                if isinstance(line, str) and canary:
                    line = line.replace("@canary@", canary.group(1))
                _write(line)
            if scene.get("stderr"):
                sys.stderr.write(scene["stderr"])
                sys.stderr.flush()
            return int(scene.get("exit", 0))
    return int(scene.get("exit", 0))


def _write(line: object) -> None:
    sys.stdout.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    sys.stdout.flush()


def _spoil_copy(how: str | None, prompt: str) -> None:
    found = re.search(r"The file to edit is (.+?) \(a working copy\)", prompt)
    if how is None or found is None:
        return
    copy = Path(found.group(1))
    if how == "delete":
        copy.unlink()
    else:
        copy.write_bytes(bytes.fromhex(how))


if __name__ == "__main__":
    sys.exit(main())
