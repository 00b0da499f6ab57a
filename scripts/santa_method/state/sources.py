"""Where a run's reviews come from, and the one check per source that a reply is its reviewer's.

A run records its `source` when it opens:

- `hook`: Claude Code's reviewer hook stores each reply with the reviewer's
  transcript; nothing else may fill a slot.
- `files`: review files handed to the gate, for hosts without hooks (and
  replies the hook stored, checked as `hook` checks them).
- `api`: the headless loop stores the replies of the calls it made itself.

The gate asks the run's source whether a slot's reply can count as its own
reviewer's (`provenance_problem`); the state layer knows no face. `api`
needs no check beyond the gate's own (the loop made each call itself; there
is no transcript). The checks of `hook` and `files` read Claude Code's
transcripts, so they live with the rest of what santa knows about Claude
Code, in `claude_code/provenance.py`, which registers them when it is
imported (`santa gate` and the hooks import it). A source whose check was
never registered lets no reply count: fail closed.
"""

from __future__ import annotations

from collections.abc import Callable
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

SOURCES = ("hook", "files", "api")


def _made_by_the_loop(asked: Asked, slot: Slot) -> str | None:
    return None


_CHECKS: dict[str, Provenance] = {"api": _made_by_the_loop}


def register(source: str, check: Provenance) -> None:
    """Make `check` the provenance check of runs whose source is `source`."""
    if source not in SOURCES:
        raise ValueError(f"'{source}' is not a source of reviews ({', '.join(SOURCES)})")
    _CHECKS[source] = check


def provenance_problem(state: RunState, slot: Slot) -> str | None:
    """Why the slot's reply cannot count as its own reviewer's, by the run's
    source (its last round is what the reviewer was asked); or None."""
    source, current = state.source, state.rounds[-1]
    check = _CHECKS.get(source)
    if check is None:
        return (
            f"no check of replies from source '{source}' is loaded, "
            "so no reply of this run can count"
        )
    return check(Asked(current.instruction, current.assignment), slot)
