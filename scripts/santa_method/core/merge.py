"""Merge the flags of several reviewers into distinct problems.

"Same problem" (ARCHITECTURE.md) means the same criterion and one of:
- quotes whose spans overlap in the output (after normalisation), or that
  contain one another when a quote cannot be located;
- the same missing item ("License section (MIT)" = "A License section",
  but "License section" != "Changelog section");
- only when neither side has evidence: near-identical wording.
Evidence of different kinds never merges: a quote and an omission are
different claims even under one criterion. Different problems stay apart
even when worded alike, which is why wording is the last resort.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from santa_method.core.text import Span, find_spans, normalise, words
from santa_method.core.types import Evidence, Flag, Issue, MergedIssue, Review

# Words that do not name what is missing ("a License section" = "License section").
_FILLER = frozenset(
    "a an the of for to in on and or with is are be no not any missing lacks lack "  # noqa: SIM905
    "required requires needed needs should must".split()
)
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_TOKEN = re.compile(r"\w+")
_LISTS = re.compile(r"\b(?:and|or)\b|[,;&/]|、|和|及|と")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

WORDING_THRESHOLD = 92.0
MISSING_TYPO_THRESHOLD = 90.0


def flags_of(label: str, review: Review) -> list[Flag]:
    """A review's flags: its critical issues, plus one flag for each failing
    check that none of its issues explains, so the fixer always has
    something concrete to act on."""
    flags = [Flag(label, issue, "issue") for issue in review.critical_issues]
    explained = {issue.criterion for issue in review.critical_issues}
    for check in review.checks:
        if check.result == "FAIL" and check.criterion not in explained:
            explained.add(check.criterion)
            text = check.detail or f"the check {check.criterion} failed"
            flags.append(Flag(label, Issue(check.criterion, text), "check"))
    return flags


def _kind(issue: Issue) -> str:
    if issue.quote is not None:
        return "quote"
    if issue.missing is not None:
        return "missing"
    return "none"


def _missing_core(text: str) -> tuple[str, frozenset[str]]:
    # Normalise first: full-width brackets (U+FF08, U+FF09) become ASCII only under NFKC.
    stripped = _PARENS.sub(" ", words(text))
    tokens = frozenset(t for t in _TOKEN.findall(stripped) if t not in _FILLER)
    return normalise(" ".join(t for t in _TOKEN.findall(stripped) if t not in _FILLER)), tokens


def same_missing(a: str, b: str) -> bool:
    from rapidfuzz import fuzz

    core_a, tokens_a = _missing_core(a)
    core_b, tokens_b = _missing_core(b)
    if not core_a or not core_b:
        return normalise(a) == normalise(b)
    if core_a == core_b:
        return True
    # "Python 3.11" and "Python 3.12", "step 1" and "step 7": different items.
    if _NUMBER.findall(words(a)) != _NUMBER.findall(words(b)):
        return False
    if _CJK.search(core_a) or _CJK.search(core_b):
        # Written without spaces: one item's name contains the other's.
        return core_a in core_b or core_b in core_a
    # One name inside the other ("License section" in "the License section
    # of the README") is one item, unless the longer one lists several.
    if not (_LISTS.search(words(a)) or _LISTS.search(words(b))) and (
        tokens_a <= tokens_b or tokens_b <= tokens_a
    ):
        return True
    return fuzz.ratio(core_a, core_b) >= MISSING_TYPO_THRESHOLD


def same_wording(a: str, b: str) -> bool:
    """Near-identical wording; a different number is a different problem."""
    from rapidfuzz import fuzz

    wa, wb = words(a), words(b)
    if _NUMBER.findall(wa) != _NUMBER.findall(wb):
        return False
    return fuzz.ratio(wa, wb) >= WORDING_THRESHOLD


def _quotes_overlap(a: str, b: str, spans_a: tuple[Span, ...], spans_b: tuple[Span, ...]) -> bool:
    if spans_a and spans_b:
        return any(x.overlaps(y) for x in spans_a for y in spans_b)
    na, nb = normalise(a), normalise(b)
    return bool(na) and bool(nb) and (na in nb or nb in na)


def same_problem(a: Issue, b: Issue, output: str | None = None) -> bool:
    if a.criterion != b.criterion or _kind(a) != _kind(b):
        return False
    if a.quote is not None and b.quote is not None:
        spans_a = find_spans(a.quote, output) if output is not None else ()
        spans_b = find_spans(b.quote, output) if output is not None else ()
        return _quotes_overlap(a.quote, b.quote, spans_a, spans_b)
    if a.missing is not None and b.missing is not None:
        return same_missing(a.missing, b.missing)
    return same_wording(a.issue, b.issue)


def issue_key(issue: Issue | MergedIssue) -> str:
    """A readable identity for a flag, stable across rounds and processes."""
    if issue.quote is not None:
        body = "quote:" + normalise(issue.quote)[:120]
    elif issue.missing is not None:
        body = "missing:" + " ".join(sorted(_missing_core(issue.missing)[1]))[:120]
    else:
        body = "issue:" + words(issue.issue)[:120]
    return f"{issue.criterion}|{body}"


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def merge_flags(flags: Sequence[Flag], output: str | None = None) -> list[MergedIssue]:
    """Group flags that are the same problem; order follows first appearance."""
    parent = list(range(len(flags)))
    for i in range(len(flags)):
        for j in range(i):
            if _find(parent, i) != _find(parent, j) and same_problem(
                flags[i].issue, flags[j].issue, output
            ):
                parent[_find(parent, i)] = _find(parent, j)
    groups: dict[int, list[Flag]] = {}
    for i, flag in enumerate(flags):
        groups.setdefault(_find(parent, i), []).append(flag)
    merged = []
    for members in groups.values():
        # Prefer a member whose evidence checked out as the group's face.
        face = next((f for f in members if f.issue.evidence == "verified"), members[0])
        labels = tuple(dict.fromkeys(f.label for f in members))
        evidences = {f.issue.evidence for f in members}
        evidence: Evidence = (
            "verified"
            if "verified" in evidences
            else "unverified"
            if "unverified" in evidences
            else "none"
        )
        issue = face.issue
        merged.append(
            MergedIssue(
                criterion=issue.criterion,
                issue=issue.issue,
                evidence=evidence,
                flagged_by=labels,
                quote=issue.quote,
                missing=issue.missing,
                location=issue.location,
                source="issue" if any(f.source == "issue" for f in members) else "check",
                key=issue_key(issue),
            )
        )
    return merged


def merge_suggestions(groups: Sequence[Sequence[str]]) -> list[str]:
    out: list[str] = []
    for suggestions in groups:
        for text in suggestions:
            if not any(same_wording(text, seen) for seen in out):
                out.append(text)
    return out


def same_flag_across_rounds(a: MergedIssue, b: MergedIssue) -> bool:
    """Whether a flag of one round is the same problem as one of another.

    The output changes between rounds, so spans cannot be compared; quotes
    are compared by containment instead.
    """
    ia = Issue(a.criterion, a.issue, a.quote, a.missing)
    ib = Issue(b.criterion, b.issue, b.quote, b.missing)
    return same_problem(ia, ib, None)
