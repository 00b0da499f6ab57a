"""Where a run's reviews come from, and how a face vouches that a reply is its reviewer's.

A run records its `source` when it opens:

- `hook`: Claude Code's reviewer hook stores each reply with the reviewer's
  transcript; nothing else may fill a slot.
- `files`: review files handed to the gate, for hosts without hooks (and
  replies the hook stored, checked as `hook` checks them).
- `api`: the headless loop stores the replies of the calls it made itself.

The gate takes its provenance checks from the face that gates
(`gate_run(..., checks=...)`): only that face knows where a reply came from.
`santa gate` passes Claude Code's transcript checks for `hook` and `files`
(`claude_code/provenance.py`: `CHECKS`); the headless loop passes `LOOP`
(`api`: it made each call itself, there is no transcript). A run whose
source the gating face has no check for lets no reply count: fail closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from santa_method.state.model.run import RunState, Slot


@dataclass(frozen=True)
class Asked:
    """What a round asked its reviewers: the instruction and the assignment
    file (a `Round` has both; a check needs no more of the run)."""

    instruction: str
    assignment: str


# (what the round asked, the slot) -> why the slot's reply cannot count as
# its reviewer's, or None.
Provenance = Callable[[Asked, Slot], str | None]
#: A face's checks, by the source of reviews they vouch for.
Checks = Mapping[str, Provenance]

SOURCES = ("hook", "files", "api")


def _made_by_the_loop(asked: Asked, slot: Slot) -> str | None:
    return None


#: The headless loop's checks: it made every call of an `api` run itself.
LOOP: Checks = {"api": _made_by_the_loop}


def provenance_problem(state: RunState, slot: Slot, checks: Checks) -> str | None:
    """Why the slot's reply cannot count as its own reviewer's, by the run's
    source and the gating face's `checks` (its last round is what the
    reviewer was asked); or None."""
    source, current = state.source, state.rounds[-1]
    check = checks.get(source)
    if check is None:
        return (
            f"this face has no check of replies from source '{source}', "
            "so no reply of this run can count"
        )
    return check(Asked(current.instruction, current.assignment), slot)
