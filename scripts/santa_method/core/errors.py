"""Errors that map onto the CLI's exit codes (DESIGN.md, CLI)."""

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
    """A model backend failed after its retries: exit 3."""

    exit_code = 3
