"""Merge the flags of several reviewers into problems: one defect, one problem.

Real reviewers file one defect under several criteria (an invented flag as
no-hallucination, compliance and technical-correctness), quote different
spans of one sentence, and name one omission in different words. A problem
is therefore not a (criterion, text) pair: it lists every criterion it
breaks, every reviewer who raised it and all its evidence. Two flags are one
problem when:

- their quotes overlap in the output (after normalisation), or contain one
  another when a quote cannot be located, under any criteria;
- their quotes are different parts of one claim (one sentence, one line of
  code or data, one hidden comment) and they name the same criterion or the
  same figure or identifier;
- both name something missing, and it is the same required thing: the same
  named section, row, item or identifier however worded ("A row for
  TLY-1377" = "The data row for SKU TLY-1377"), or, without names, the same
  words ("License section (MIT)" = "A License section");
- one has no evidence and says, under the same criterion, what one with
  evidence (or another without) says in near-identical words.

Different defects stay apart, even in one sentence: two flags whose
descriptions name figures or identifiers, none of them shared ("2.5.0" and
"--turbo" in "Version 2.5.0 adds `--turbo`"), are different problems however
their quotes overlap, and no chain of other flags joins them. Where the evidence cannot tell, flags stay
apart: a duplicate costs the fixer a minute, a lost problem may ship.

A problem's primary criterion is the one most of its reviewers named (the
first named on a tie); its face (issue text, quote, missing item) is a flag
under that criterion, one whose quote checked out if there is one.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from santa_method.core.text import Span, claim_spans, find_spans, normalise, words
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
# A figure or identifier: anything with a digit, or a word joined by . _ - (read_csv, v2.4).
_SALIENT = re.compile(r"\w[\w.\-/]*\w|\w")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# A name given in quotes or backticks: 'Upgrading', `pip install ...`.
_NAMED = re.compile(
    r"`([^`]+)`|'([^'\n]{2,80})'|\"([^\"\n]{2,80})\"|\u201c([^\u201d\n]{2,80})\u201d"
)
# A code that names a thing (a SKU, a ticket): letters and two or more digits, joined.
_CODE_ID = re.compile(r"\b(?=[\w.-]*[a-z])(?=[\w.-]*\d[\w.-]*\d)\w+(?:[-_.]\w+)+\b")

WORDING_THRESHOLD = 92.0
MISSING_TYPO_THRESHOLD = 90.0


def flags_of(label: str, review: Review) -> list[Flag]:
    """A review's flags: its critical issues, plus one flag for each failing
    check that none of its issues explains. Validation refuses such a check in
    a reply whose issues name criteria, so these come only from replies in the
    seed's form (plain-string issues), where the check is the only clue."""
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


def salient(text: str) -> frozenset[str]:
    """The figures and identifiers a text names: tokens with a digit, or
    joined by . _ - / (`read_csv`, `2.5.0`, `TLY-1377`, `48,200` = `48200`),
    and the figures inside them (`TLY-0842` names `0842` too)."""
    text = _THOUSANDS.sub("", words(text))
    out = set()
    for token in _SALIENT.findall(text):
        token = token.strip(".-/")
        if token and (any(ch.isdigit() for ch in token) or re.search(r"\w[._/-]\w", token)):
            out.add(token)
            out.update(p for p in re.split(r"[-_/]", token) if any(ch.isdigit() for ch in p))
    for match in _NAMED.finditer(text):
        name = next(g for g in match.groups() if g is not None).strip()
        if name and len(name.split()) == 1:
            out.add(name.strip(".-/"))
    return frozenset(out)


def _missing_core(text: str) -> tuple[str, frozenset[str]]:
    # Normalise first: full-width brackets (U+FF08, U+FF09) become ASCII only under NFKC.
    stripped = _PARENS.sub(" ", words(text))
    tokens = frozenset(t for t in _TOKEN.findall(stripped) if t not in _FILLER)
    return normalise(" ".join(t for t in _TOKEN.findall(stripped) if t not in _FILLER)), tokens


def _names(text: str) -> tuple[frozenset[str], str]:
    """What a missing item is called (quoted or backticked names, codes such
    as SKUs), and the rest of its text, for its numbers."""
    text = _THOUSANDS.sub("", words(text))
    names = set()
    rest = text
    for match in _NAMED.finditer(text):
        names.add(normalise(next(g for g in match.groups() if g is not None)))
    rest = _NAMED.sub(" ", rest)
    for match in _CODE_ID.finditer(rest):
        names.add(normalise(match.group()))
    rest = _CODE_ID.sub(" ", rest)
    return frozenset(n for n in names if n), rest


def _named_same(a: str, b: str) -> bool | None:
    """Same required thing by name; None when neither side names one."""
    names_a, rest_a = _names(a)
    names_b, rest_b = _names(b)
    if not names_a and not names_b:
        return None
    nums_a, nums_b = set(_NUMBER.findall(rest_a)), set(_NUMBER.findall(rest_b))
    numbers_agree = nums_a <= nums_b or nums_b <= nums_a
    if names_a and names_b:
        return bool(names_a & names_b) and numbers_agree
    # One side names it, the other describes it: the name must appear there.
    named, other = (names_a, b) if names_a else (names_b, a)
    return any(name in normalise(other) for name in named) and numbers_agree


def _describes(description: str, missing: str) -> bool:
    """Whether a quoted flag's description names every name of an omission
    ("a placeholder instead of the `400 Bad Request` and `404 Not Found`
    errors" for the omitted error cases): the same gap seen from its place."""
    names, _ = _names(missing)
    text = normalise(description)
    return bool(names) and all(name in text for name in names)


def same_missing(a: str, b: str) -> bool:
    """Whether two omissions name the same required thing."""
    from rapidfuzz import fuzz

    by_name = _named_same(a, b)
    if by_name is not None:
        return by_name
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


def _contains(a: str, b: str) -> bool:
    na, nb = normalise(a), normalise(b)
    return bool(na) and bool(nb) and (na in nb or nb in na)


def _quotes_overlap(a: str, b: str, spans_a: tuple[Span, ...], spans_b: tuple[Span, ...]) -> bool:
    if spans_a and spans_b:
        return any(x.overlaps(y) for x in spans_a for y in spans_b)
    return _contains(a, b)



def _focus(issue: Issue, other: Issue) -> frozenset[str]:
    """What a quoted flag points at: the figures and identifiers of the
    quoted text that its description names, plus those of its own quote when
    that quote is strictly the narrower of the two."""
    assert issue.quote is not None and other.quote is not None
    mine, theirs = normalise(issue.quote), normalise(other.quote)
    found = salient(issue.issue) & (salient(issue.quote) | salient(other.quote))
    if mine != theirs and mine in theirs:
        found |= salient(issue.quote)
    return found


def different_defects(a: Issue, b: Issue) -> bool:
    """Two flags whose descriptions name figures or identifiers, none shared:
    different defects, however close their evidence."""
    if a.quote is None or b.quote is None:
        return False
    fa, fb = _focus(a, b), _focus(b, a)
    return bool(fa) and bool(fb) and not (fa & fb)


class _Place:
    """Where the quotes of a set of flags lie in one output (computed once)."""

    def __init__(self, output: str | None) -> None:
        self.output = output
        self.claims = claim_spans(output) if output is not None else ()
        self._starts = [c.start for c in self.claims]
        self._spans: dict[str, tuple[Span, ...]] = {}
        self._claims: dict[str, frozenset[int]] = {}

    def spans(self, quote: str) -> tuple[Span, ...]:
        if self.output is None:
            return ()
        if quote not in self._spans:
            self._spans[quote] = find_spans(quote, self.output)
        return self._spans[quote]

    def claims_of(self, quote: str) -> frozenset[int]:
        """The claims `quote`'s places overlap. Claims are consecutive, so
        each place's first claim is found by bisection, not by a scan of
        every claim of the output (per pair of flags)."""
        if quote not in self._claims:
            found: set[int] = set()
            for span in self.spans(quote):
                i = max(bisect.bisect_right(self._starts, span.start) - 1, 0)
                while i < len(self.claims) and self.claims[i].start < span.end:
                    if span.overlaps(self.claims[i]):
                        found.add(i)
                    i += 1
            self._claims[quote] = frozenset(found)
        return self._claims[quote]


def _same_quoted(a: Issue, b: Issue, place: _Place) -> bool:
    assert a.quote is not None and b.quote is not None
    spans_a, spans_b = place.spans(a.quote), place.spans(b.quote)
    if _quotes_overlap(a.quote, b.quote, spans_a, spans_b):
        return True
    if not (spans_a and spans_b and place.claims):
        return False
    if not place.claims_of(a.quote) & place.claims_of(b.quote):
        return False
    # Two parts of one claim: one problem only if they say so.
    return a.criterion == b.criterion or bool(_focus(a, b) & _focus(b, a))


def same_problem(
    a: Issue, b: Issue, output: str | None = None, *, _place: _Place | None = None
) -> bool:
    """Whether two flags (of any reviewers, any criteria) are one defect."""
    place = _place if _place is not None else _Place(output)
    kinds = {_kind(a), _kind(b)}
    if different_defects(a, b):
        return False
    if kinds == {"quote"}:
        return _same_quoted(a, b, place)
    if kinds == {"missing"}:
        assert a.missing is not None and b.missing is not None
        return same_missing(a.missing, b.missing)
    if kinds == {"quote", "missing"}:
        quoted, omission = (a, b) if a.quote is not None else (b, a)
        assert omission.missing is not None
        return _describes(quoted.issue, omission.missing)
    if "none" in kinds:
        # Without evidence, only near-identical words under one criterion.
        return a.criterion == b.criterion and same_wording(a.issue, b.issue)
    return False


def issue_key(issue: Issue | MergedIssue) -> str:
    """A flag's identity, stable across rounds and processes, readable where
    it can be, holding no secret, and left as it is by redaction: so a run's
    state, its log and every report hold the same key.

    It is `readable_key` when the flag's own words hold no secret (judged on
    those words: a quote run together without its spaces looks random to
    the entropy rule, its words do not) and redaction leaves the key as it
    is. Else a quote's key keeps its words apart, and failing that it is
    sealed (`seal_key`). A key whose words hold a secret is sealed from
    their redacted form, so not even a hash of the secret is kept.
    """
    from santa_method.core.redact import find_secrets, redact_text

    source = issue.quote if issue.quote is not None else issue.missing
    if find_secrets(issue.issue if source is None else source) or _holds_secret(issue.criterion):
        shown = Issue(
            redact_text(issue.criterion),
            redact_text(issue.issue),
            None if issue.quote is None else redact_text(issue.quote),
            None if issue.missing is None else redact_text(issue.missing),
        )
        return seal_key(shown.criterion, readable_key(shown))
    readable = readable_key(issue)
    if redact_text(readable) == readable:
        return readable
    if issue.quote is not None:
        spaced = f"{issue.criterion}|quote:{words(issue.quote)[:120]}"
        if redact_text(spaced) == spaced:
            return spaced
    return seal_key(issue.criterion, readable)


@lru_cache(maxsize=256)
def _holds_secret(criterion: str) -> bool:
    """Criterion ids recur in every flag of a gate: each is judged once."""
    from santa_method.core.redact import find_secrets

    return bool(find_secrets(criterion))


def readable_key(issue: Issue | MergedIssue) -> str:
    """`<criterion>|quote:` and the quote in its matching form (`normalise`),
    or `|missing:` and the missing thing's words, or `|issue:` and the issue's
    words. CI reports fingerprint flags by this form of their redacted text."""
    if issue.quote is not None:
        body = "quote:" + normalise(issue.quote)[:120]
    elif issue.missing is not None:
        body = "missing:" + " ".join(sorted(_missing_core(issue.missing)[1]))[:120]
    else:
        body = "issue:" + words(issue.issue)[:120]
    return f"{issue.criterion}|{body}"


def seal_key(criterion: str, readable: str) -> str:
    """A key that shows none of its words: `<criterion>|redacted:<the first 16
    hex digits of the sha256 of a readable key>` (one that holds no secret),
    still one per problem and stable across rounds. The iteration log seals
    a key that redaction would change the same way."""
    from santa_method.core.redact import redact_text

    digest = hashlib.sha256(readable.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{redact_text(criterion)}|redacted:{digest}"


def _group(flags: Sequence[Flag], output: str | None) -> list[list[int]]:
    """Join flags into groups: a pair that is one problem joins its groups,
    unless some pair across them is two different defects."""
    place = _Place(output)
    n = len(flags)
    group_of = list(range(n))
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    apart = {
        (i, j)
        for i in range(n)
        for j in range(i)
        if different_defects(flags[i].issue, flags[j].issue)
    }
    for i in range(n):
        for j in range(i):
            gi, gj = group_of[i], group_of[j]
            if gi == gj or (i, j) in apart:
                continue
            if not same_problem(flags[i].issue, flags[j].issue, _place=place):
                continue
            if any((max(x, y), min(x, y)) in apart for x in members[gi] for y in members[gj]):
                continue
            keep, gone = min(gi, gj), max(gi, gj)
            for m in members.pop(gone):
                group_of[m] = keep
                members[keep].append(m)
    return [sorted(m) for _, m in sorted(members.items())]


def _primary(members: Sequence[Flag]) -> str:
    reviewers: Counter[str] = Counter()
    for criterion, _label in dict.fromkeys((f.issue.criterion, f.label) for f in members):
        reviewers[criterion] += 1
    best = max(reviewers.values())
    return next(f.issue.criterion for f in members if reviewers[f.issue.criterion] == best)


def merge_flags(flags: Sequence[Flag], output: str | None = None) -> list[MergedIssue]:
    """Group flags that are one problem; order follows first appearance."""
    merged = []
    for indices in _group(flags, output):
        members = [flags[i] for i in indices]
        primary = _primary(members)
        under = [f for f in members if f.issue.criterion == primary]
        face = next((f for f in under if f.issue.evidence == "verified"), under[0])
        evidences = {f.issue.evidence for f in members}
        evidence: Evidence = (
            "verified"
            if "verified" in evidences
            else "unverified"
            if "unverified" in evidences
            else "none"
        )
        issue = face.issue
        quotes = [issue.quote] if issue.quote is not None else []
        for f in members:
            if f.issue.quote is not None and f.issue.quote not in quotes:
                quotes.append(f.issue.quote)
        merged.append(
            MergedIssue(
                criterion=primary,
                issue=issue.issue,
                evidence=evidence,
                flagged_by=tuple(dict.fromkeys(f.label for f in members)),
                quote=issue.quote,
                missing=issue.missing,
                location=issue.location,
                source="issue" if any(f.source == "issue" for f in members) else "check",
                key=issue_key(issue),
                criteria=tuple(dict.fromkeys([primary, *(f.issue.criterion for f in members)])),
                quotes=tuple(quotes),
                criteria_by=tuple(
                    (
                        label,
                        tuple(
                            dict.fromkeys(f.issue.criterion for f in members if f.label == label)
                        ),
                    )
                    for label in dict.fromkeys(f.label for f in members)
                ),
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
    """Whether a problem of one round is the same problem as one of another.

    The output changes between rounds, so spans cannot be compared: quotes
    are compared by containment, and the two must share a criterion.
    """
    if not set(a.all_criteria) & set(b.all_criteria):
        return False
    quotes_a, quotes_b = a.all_quotes, b.all_quotes
    if quotes_a and quotes_b:
        ia = Issue(a.criterion, a.issue, a.quote)
        ib = Issue(b.criterion, b.issue, b.quote)
        if different_defects(ia, ib):
            return False
        return any(_contains(x, y) for x in quotes_a for y in quotes_b)
    if a.missing is not None and b.missing is not None:
        return same_missing(a.missing, b.missing)
    if quotes_a or quotes_b or a.missing is not None or b.missing is not None:
        return False
    return same_wording(a.issue, b.issue)
