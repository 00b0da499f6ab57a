"""The provenance checks of every face at once, for tests that gate runs of
any source directly through `gate_run` (each face passes only its own)."""

from __future__ import annotations

from santa_method.claude_code.provenance import CHECKS
from santa_method.state.sources import LOOP, Checks

EVERY_FACE: Checks = {**CHECKS, **LOOP}
