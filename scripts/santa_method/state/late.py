"""Replies no slot can take: a valid FAIL counts against its round, anything else is named.

A reply from a reviewer the guard let start belongs to the round it was
started for, whenever it arrives. When that round's slots all have
replies, or the round was gated already, the reply becomes an *extra* of
the round, labelled after its slots (D, E, ... when the run has two
reviewers). The rule, in one place:

- A valid FAIL counts against its round. The round's next gate counts it
  (NAUGHTY, its flags go to the fixer). A gate that said ship or rereview
  before it arrived no longer stands (`stale_gate`): the run cannot ship or
  re-review until the round is gated again. A round whose gate asked for a
  fix failed already: the FAIL changes nothing there, and is kept and named.
- Anything else (a PASS, a reply that is not a valid review) is not
  counted: the hook's answer says so (`note`), and so does the next gate.
- After the run shipped or was escalated a reply is only kept with the
  run; a FAIL after a ship is what `santa log escape` records, and the note
  says how.
"""

from __future__ import annotations

from typing import Any

from santa_method.core.gate import default_labels
from santa_method.state.model.run import Round, RunState, Slot

#: The gate's next steps a late FAIL overturns (the others failed the round already).
STALE_AFTER = ("ship", "rereview")


def counts(extra: Slot) -> bool:
    """An extra reply that counts against its round: a valid FAIL (as the hook judged it)."""
    return extra.verdict == "FAIL" and not extra.failed


def why_extra(state: RunState, r: Round) -> str | None:
    """Why a reply to round `r` cannot fill a slot now, or None when one is free."""
    current = state.rounds[-1]
    if state.status != "open":
        return f"run {state.id} had {state.status} already"
    if r.round != current.round:
        return f"round {r.round} was over (round {current.round} reviews the fixed text)"
    if not r.open:
        said = r.gates[-1].next if r.gates else "none"
        return f"round {r.round} had been gated (next: {said})"
    if all(slot is not None for slot in r.slots.values()):
        return f"every slot of round {r.round} already had a reply"
    return None


def keep(state: RunState, r: Round, slot: Slot, why: str) -> str:
    """Keep `slot` as an extra reply of round `r`; returns its label."""
    labels = default_labels(len(r.slots) + len(r.extras) + 1)
    label = next(x for x in labels if x not in r.slots and x not in r.extras)
    slot.why_extra = why
    r.extras[label] = slot
    return label


def _said(r: Round) -> str:
    return r.gates[-1].next if r.gates else "none"


def note(state: RunState, r: Round, label: str, slot: Slot) -> str:
    """The hook's answer about an extra reply: what became of it, said out loud."""
    who = f"agent {slot.agent_id}"
    run = f"run {state.id}"
    if counts(slot):
        head = f"santa: reviewer {label}'s FAIL ({who}) for round {r.round} of {run}"
        if state.status == "shipped":
            return (
                f"{head} arrived after the run shipped; it is kept with the run but can no "
                "longer stop the ship. If it names a real defect, record the escape: "
                f"santa log escape --run {state.id} --data '{{\"description\": \"...\"}}'"
            )
        if state.status != "open":
            return f"{head} arrived after the run was {state.status}; it is kept with the run"
        if r.round != state.rounds[-1].round or (not r.open and _said(r) not in STALE_AFTER):
            return (
                f"{head} arrived after that round's gate said {_said(r)}; round {r.round} is "
                "NAUGHTY already, so it changes nothing there (its flags did not reach the fixer)"
            )
        if not r.open:
            return (
                f"{head} arrived after the round's gate said {_said(r)}; it counts against "
                f"round {r.round}: that gate no longer stands, and the run cannot ship or be "
                f"re-reviewed; run 'santa gate --run {state.id}' again"
            )
        return (
            f"{head} arrived when every slot had a reply; it counts against round {r.round}: "
            "the gate will not say NICE"
        )
    what = "a PASS" if slot.verdict == "PASS" and not slot.failed else "not a valid review"
    text = (
        f"santa: reply {label} ({who}, {what}) for round {r.round} of {run} was not counted: "
        f"{slot.why_extra}"
    )
    return text + ("; the next gate names it" if state.status == "open" else "")



def stale_gate(state: RunState) -> str | None:
    """Why the current round's last gate no longer stands, or None: a FAIL
    counted against the round arrived after a gate that found nothing to fix."""
    if state.status != "open" or not state.rounds:
        return None
    r = state.rounds[-1]
    if r.open or not r.gates or r.gates[-1].next not in STALE_AFTER:
        return None
    last = r.gates[-1]
    for label, extra in r.extras.items():
        if counts(extra) and extra.gated_valid is None:
            said = "NICE gate" if last.verdict == "NICE" else f"gate (next: {last.next})"
            return (
                f"reviewer {label}'s FAIL arrived after round {r.round}'s {said}, so that gate "
                f"no longer stands: run 'santa gate --run {state.id}' again"
            )
    return None


def unseen(state: RunState) -> list[tuple[Round, str, Slot]]:
    """Extra replies no gate has seen yet, of every round, oldest round first."""
    return [
        (r, label, extra)
        for r in state.rounds
        for label, extra in r.extras.items()
        if extra.gated_valid is None
    ]


def entry(
    r: Round, label: str, extra: Slot, *, valid: bool, verdict: str | None, counted: bool
) -> dict[str, Any]:
    """One extra reply as the gate reports it (`extra_replies`)."""
    why = extra.why_extra or ""
    if not counted and verdict == "FAIL" and valid:
        why += f"; round {r.round} had failed already"
    return {
        "round": r.round,
        "label": label,
        "agent_id": extra.agent_id,
        "verdict": verdict,
        "valid": valid,
        "counted": counted,
        "why": why,
    }
