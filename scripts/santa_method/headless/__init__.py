"""The headless face: `verify()` in Python and `santa run` on the command line.

from santa_method.headless.api import VerifyOptions, verify_sync
result = verify_sync("What the output must do.", Path("README.md"),
                     options=VerifyOptions(backend="anthropic"))
print(result.verdict, result.rounds, result.cost_usd, result.report)
"""

from __future__ import annotations

from santa_method.headless.api import VerifyResult, verify, verify_sync

__all__ = ["VerifyResult", "verify", "verify_sync"]
