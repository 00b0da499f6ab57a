"""The public Python API in one import: the loop, its result, and the backend contract.

Why a module of its own: callers (CI scripts, other agent repositories)
import from here, so the loop's internals can move without breaking them.
"""

from __future__ import annotations

from santa_method.core.errors import BackendError, InputError, RefusedError
from santa_method.headless.backends.base import (
    Backend,
    FixReply,
    FixRequest,
    FollowUp,
    ReviewReply,
    ReviewRequest,
    Tokens,
)
from santa_method.headless.loop import verify, verify_sync
from santa_method.headless.options import VerifyOptions
from santa_method.headless.results import RoundRecord, VerifyResult

__all__ = [
    "Backend",
    "BackendError",
    "FixReply",
    "FixRequest",
    "FollowUp",
    "InputError",
    "RefusedError",
    "ReviewReply",
    "ReviewRequest",
    "RoundRecord",
    "Tokens",
    "VerifyOptions",
    "VerifyResult",
    "verify",
    "verify_sync",
]
