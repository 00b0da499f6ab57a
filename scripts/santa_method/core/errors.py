"""Errors that map onto the CLI's exit codes (ARCHITECTURE.md, "CLI exit codes")."""

from __future__ import annotations


class SantaError(Exception):
    """Base class; the message is one clear sentence meant for a person."""

    exit_code = 2


class InputError(SantaError):
    """Bad usage or unreadable input: exit 2."""

    exit_code = 2


class RefusedError(SantaError):
    """A step the run's state does not allow (out of order, past the cap): exit 1."""

    exit_code = 1


class BackendError(SantaError):
    """A model backend failed after its retries: exit 3.

    `transient` says whether the same call may succeed later (overloaded,
    timed out, no credentials yet). A call that will fail the same way every
    time (a request too big to send, a fixer reply cut off, or no JSON when
    asked twice) is not transient: resuming would only pay for it again, so
    the run it belongs to is escalated instead of kept open.
    """

    exit_code = 3

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class StartError(BackendError):
    """A backend that cannot start (no key, no package, no login), found
    before anything was opened: exit 3, with no run or batch to resume."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)
