"""Does a reply say anything besides its final review that disagrees with it?

A reviewer may draft a FAIL, think again and send a PASS; or a reply steered
by the text under review may hide a second review where a reader would not
look. Which review the reviewer meant is not for the helper to guess, so a
reply holding another verdict, or another result for a check, is ambiguous
(ARCHITECTURE.md, "Extraction"). What counts as "another review" is looked
for in two ways, both fail-closed:

- Structure. Every object decoded from the reply besides the final review
  (earlier top-level objects, objects in arrays, JSON held in strings, YAML
  blocks and paragraphs), and everything nested inside the final review (a
  `draft` beside a check, a review held as JSON in a `detail`), is walked
  for verdict and result keys.
- Text. Outside the final review, and in the reviewer's own words inside it
  (details, issues, suggestions), the text is searched for a verdict, a
  result, or a criterion of the final review given a result, written in any
  notation a reviewer drafts in (JSON, a Python or Ruby dict, YAML with
  tags, anchors or block scalars, TOML, Markdown keys, tables and headings,
  XML tags, `Verdict: ❌ FAIL`), after decoding what hides letters: escapes
  (`\\u0041`, `\\U00000041`, `\\x41`, `\\101`, `\\"`), HTML entities,
  compatibility forms (NFKC), invisible characters (`F\\u200bAIL`) and
  struck-out text (`~~PASS~~`).

Words that mean PASS or FAIL ("approved", "rejected", a check mark) count as
them, so prose that agrees with the final review stays valid. Evidence
inside the final review (its quotes, what is missing) is never searched: it
may quote an output that itself says `verdict: FAIL`, and that quote is
evidence, not a second review. A key beside the verdict or a check's result
that reads as one (`"Verdict"`, `"verdict "`, `"final_verdict"`) is another.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

from santa_method.core.yaml_safe import safe_load

# Characters that render as nothing (format characters, variation selectors,
# fillers): a key or a value split by one still reads as the word.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\U000e0100-\U000e01ef]"
)
_ESCAPE = re.compile(
    r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|([0-7]{1,3})|(.))", re.DOTALL
)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}
_STRUCK = re.compile(r"~~[^~\n]*~~")

# Marks and words that say PASS or FAIL in other words: a draft saying
# "approved" agrees with a PASS; one saying "rejected" does not.
_PASS_MARKS = "\u2705\u2714\u2611\U0001f7e2\U0001f44d"
_FAIL_MARKS = "\u274c\u274e\u2717\u2718\U0001f534\U0001f44e\u26d4\U0001f6ab"
_SAYS_PASS = frozenset(
    [
        "PASS",
        "PASSED",
        "PASSES",
        "PASSING",
        "OK",
        "OKAY",
        "APPROVE",
        "APPROVED",
        "ACCEPT",
        "ACCEPTED",
        "CLEAN",
        "GOOD",
        "FINE",
        "LGTM",
        "SHIP",
        "YES",
        "SUCCESS",
        "GREEN",
        "NICE",
    ]
) | frozenset(_PASS_MARKS)
_SAYS_FAIL = frozenset(
    [
        "FAIL",
        "FAILED",
        "FAILS",
        "FAILING",
        "REJECT",
        "REJECTED",
        "NO",
        "BAD",
        "RED",
        "NAUGHTY",
        "BLOCKED",
        "BLOCK",
    ]
) | frozenset(_FAIL_MARKS)

# A key as a reviewer drafts it: bare, quoted either way, in Markdown bold or
# code, a Ruby symbol, an XML tag, with a remark after it (`Verdict
# (draft):`); then a separator (`:`, `=`, `=>`, a dash, a table's `|`, a
# tag's `>`); then YAML's tags, anchors or a block scalar's header. The value
# is on the same line, or on the next one if that is indented (YAML): never
# across a line break into what follows, such as the fence that holds the
# review itself ("Final verdict:" above "```json").
_KEY = r"""
    (?<![\w\\])[*_`"':<|]{{0,4}}[ \t]{{0,4}}(?:{name})[*_`"']{{0,4}}
    (?:[ \t]{{0,4}}\([^)\n]{{0,40}}\))?
    [ \t]{{0,8}}(?:=>|->|:=|[:=|>\u2013\u2014\u2192\u21d2-])[*_`]{{0,2}}[ \t]{{0,8}}(?:\n[ \t]{{1,16}})?
    (?:(?:!!?[\w/:.-]*|&[\w-]+)[ \t]+)*
    (?:[|>][1-9]?[+-]?[1-9]?[ \t]{{0,8}}(?:\#[^\n]*)?\n[ \t]{{0,16}})?
    [*_`]{{0,2}}[ \t]{{0,8}}
"""
# Its value: anything quoted, a YAML alias (whose text lies elsewhere), a
# negated pass, PASS or FAIL (after a mark such as an emoji) however the
# sentence goes on, a mark alone, or one bare word that ends the entry
# (`verdict: REJECT`, `{verdict: REJECT}`): a word followed by more prose
# ("verdict: the output holds") is a sentence, not an entry.
_VALUE = (
    r"""
    (?:(?P<q>\"\"\"|'''|["'])(?P<quoted>[^\n]*?)(?P=q)
      |(?P<alias>\*[\w-]+)
      |(?P<negated>(?:not|no|non|never)[ \t-]+(?:a[ \t]+)?pass\w*)
      |(?:[^\w\s"'`*]{1,3}[ \t]{0,4})?(?P<word>PASS|FAIL)\b
      |(?P<mark>["""
    + _PASS_MARKS
    + _FAIL_MARKS
    + r"""])
      |(?P<bare>[^\W\d][\w-]{0,40})(?=[ \t]{0,4}(?:$|[\r\n,;:.!?)\]}*`'"<>|\u2013\u2014-]))
    )
"""
)
_FLAGS = re.IGNORECASE | re.VERBOSE
# A verdict as a heading or a line of its own, its value on a later line
# after blank ones ("## Verdict" then "FAIL"): only PASS, FAIL, a negated
# pass or a mark count there, as any other word is the prose that follows.
_HEADING = re.compile(
    r"""
    ^[ \t]{0,8}(?:\#{1,6}[ \t]{0,4})?[*_`]{0,4}(?:[\w'-]{1,30}[ \t]{1,4}){0,3}[\w-]{0,30}verdict[\w-]{0,30}[*_`]{0,4}[ \t]{0,4}:?[ \t]{0,8}\n
    (?:[ \t]{0,16}\n){0,8}[ \t]{0,16}[*_`]{0,2}
    (?:(?P<negated>(?:not|no|non|never)[ \t-]+(?:a[ \t]+)?pass\w*)
      |(?:[^\w\s"'`*]{1,3}[ \t]{0,4})?(?P<word>PASS|FAIL)\b
      |(?P<mark>["""
    + _PASS_MARKS
    + _FAIL_MARKS
    + r"""]))
    """,
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
# A verdict said in a sentence: "My verdict is FAIL", "the verdict would be
# a FAIL". Only PASS, FAIL, a negated pass or a mark count here: "the verdict
# is clear" is prose.
_SENTENCE = re.compile(
    r"""
    (?<![\w\\])[\w-]{0,30}verdict[\w-]{0,30}[ \t]{1,4}
    (?:is|was|would[ \t]{1,4}be|remains|stays)[ \t]{1,4}
    (?:(?:actually|still|now|clearly|a|an)[ \t]{1,4}){0,2}[*_`"']{0,2}
    (?:(?P<negated>(?:not|no|non|never)[ \t-]+(?:a[ \t]+)?pass\w*)
      |(?P<word>PASS|FAIL)\b
      |(?P<mark>["""
    + _PASS_MARKS
    + _FAIL_MARKS
    + r"""]))
    """,
    re.IGNORECASE | re.VERBOSE,
)
# Bounded everywhere: an unbounded run of word characters or spaces before
# a key made the search quadratic on text such as "a-a-a-..." or long rules.
_VERDICT = re.compile(_KEY.format(name=r"[\w-]{0,30}verdict[\w-]{0,30}") + _VALUE, _FLAGS)
_RESULT = re.compile(_KEY.format(name=r"[\w-]{0,30}results?") + _VALUE, _FLAGS)
_MENTION = re.compile(r"verdict|result", re.IGNORECASE)
_WORD = re.compile("verdict", re.IGNORECASE)
_RESULT_WORD = re.compile("result", re.IGNORECASE)
# A word used for a verdict (`Overall: FAIL`): its key is one of these words,
# and only PASS or FAIL after it states one (`Status: done` does not).
_SYNONYM = re.compile(
    _KEY.format(name=r"(?:overall|outcome|status|decision|conclusion)") + _VALUE, _FLAGS
)
_SYNONYM_WORD = re.compile("overall|outcome|status|decision|conclusion", re.IGNORECASE)
# How far before its name a key may start: `[*_`"':<|]{0,4}[ \t]{0,4}` (the
# name's own `[\w-]{0,30}` prefix is added where a pattern has it).
_KEY_REACH = 8
_FENCE_BLOCK = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.DOTALL)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")

# Bounds on the structural search outside the final review, so a reply built
# to be slow stays linear: the text search above still covers what they skip.
_MAX_REGION = 16 * 1024
_MAX_REGIONS = 16
_MAX_DECODED_STRINGS = 64
_MAX_CRITERIA = 64
# Where a review's evidence lives: quoted from the output, never a review.
_EVIDENCE = frozenset({"quote", "missing", "evidence"})
# Fields whose values the review contract reads itself, not prose.
_READ_VALUES = frozenset({"verdict", "result", "criterion", "canary"})
# Keys that state a verdict when their value is PASS or FAIL, and only then.
_VERDICT_LIKE = frozenset({"overall", "outcome", "status", "decision", "conclusion"})
_WORDS = ("PASS", "FAIL")

_Claim = tuple[str, str | None, str]  # ("verdict" or "result", criterion, value)


def disagreement(
    final: dict[str, Any], text: str, span: tuple[int, int], others: list[Any]
) -> str | None:
    """Why the reply is ambiguous, or None.

    `final` is the decoded final review, found at `span` of `text`; `others`
    are the other objects the scan decoded (earlier top-level objects and
    objects inside arrays)."""
    if "verdict" not in final:
        return None  # not a review at all: the schema says what is missing
    verdict = _norm(final["verdict"])
    results = _results_of(final)
    before, after = _readable(text[: span[0]]), _readable(text[span[1] :])
    outside = before + "\n" + after
    claims = list(_inside(final))
    for value in others:
        claims += _claims(value, None, decode_strings=True)
    for value in _yaml_regions(outside):
        # YAML reads prose too ("Verdict: the output holds" is a mapping, and
        # "Verdict:" alone one whose value is null): only a value of one
        # word is a draft's entry.
        claims += _claims(value, None, decode_strings=True, loose=True)
    criteria = tuple(results)[:_MAX_CRITERIA]
    # Apart: a heading's value never reaches past the review.
    claims += _prose_claims(outside, criteria, parts=(before, after))
    for words in _own_words(final):
        claims += _prose_claims(_readable(words), criteria)
    for kind, criterion, value in claims:
        if kind == "verdict" and value != verdict:
            return _ambiguous(f"a verdict of {value} besides {verdict}")
        if kind == "result":
            if criterion is not None and criterion in results:
                if value != results[criterion]:
                    return _ambiguous(
                        f"{criterion} is {value} in one, {results[criterion]} in the other"
                    )
            elif verdict == "PASS" and value != "PASS":
                return _ambiguous(f"a check result of {value} besides the verdict PASS")
    return None


def _prose_claims(
    text: str, criteria: Sequence[str], parts: Sequence[str] | None = None
) -> list[_Claim]:
    """The prose rule, for the text around the final review and for the
    reviewer's own words inside it alike: a verdict, a result or a criterion
    given a result in any notation (`verdict: FAIL`, `result = FAIL`), a
    verdict said in a sentence ("My verdict is FAIL") or under a heading.
    Keyed on such statements, never on a word alone: "size < 1 raises
    ValueError before range could fail" states no verdict."""
    found = _text_claims(text, criteria)
    found += [("verdict", None, _heading_value(m)) for m in _near(_SENTENCE, text, _WORD, 30)]
    for part in parts if parts is not None else (text,):
        found += [("verdict", None, _heading_value(m)) for m in _near(_HEADING, part, _WORD, 154)]
    return found


def _near(
    pattern: re.Pattern[str], text: str, word: re.Pattern[str], reach: int
) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)`, trying only the positions at most `reach`
    characters before a `word` the pattern's key must hold. Every match holds
    it, so the matches are the same; on a long text where the word is rare,
    the regex engine is not started at each position (a 2 MB rule of dashes
    took seconds). Where the word is everywhere, the engine's own scan is
    the quicker."""
    hits = [hit.start() for hit in word.finditer(text)]
    if len(hits) * (reach + 1) > len(text) // 4:
        yield from pattern.finditer(text)
        return
    untried = 0  # each position is tried once: a match there is the same each time
    for at in hits:
        for start in range(max(untried, at - reach), at + 1):
            match = pattern.match(text, start)
            untried = start + 1
            if match is not None:
                yield match
                untried = match.end()
                break


def _own_words(final: dict[str, Any]) -> Iterator[str]:
    """Every string of the final review the reviewer wrote in their own words
    (check details, issue descriptions, suggestions, any other field, and
    keys), at any depth: all but its evidence (quotes of the output, what is
    missing: they may say anything the output says) and the values the
    contract reads (the verdict, criteria, results, the canary)."""
    stack: list[Any] = [final]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                if isinstance(key, str) and (key in _EVIDENCE or key in _READ_VALUES):
                    continue
                if isinstance(key, str):
                    yield key
                stack.append(value)


def _ambiguous(what: str) -> str:
    return (
        f"the reply holds more than one review and they disagree ({what}): it is ambiguous; "
        "send exactly one review"
    )


def _norm(value: Any) -> str:
    """A verdict or result as compared: a string stripped and upper-cased, a
    word or mark that means PASS or FAIL as that; anything else (a list, a
    number) as its JSON, which matches no verdict."""
    if isinstance(value, str):
        word = value.strip().strip("*_`").strip().rstrip(".!;,").strip().upper()
        if word in _SAYS_PASS:
            return "PASS"
        return "FAIL" if word in _SAYS_FAIL else word
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _key(key: Any) -> str:
    """A key as a reader sees it: compatibility forms folded (full-width
    letters) and invisibles gone, as prose is read."""
    if not isinstance(key, str):
        return ""
    text: str = key
    if not text.isascii():
        text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return text.strip(" *_`\"':").lower()


def _results_of(final: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = {}
    checks = final.get("checks")
    for item in checks if isinstance(checks, list) else ():
        if isinstance(item, dict) and isinstance(item.get("criterion"), str):
            results.setdefault(item["criterion"].strip(), _norm(item.get("result")))
    return results


def _inside(final: dict[str, Any]) -> Iterator[_Claim]:
    """What is nested in the final review besides its own verdict and its
    checks' own results: a draft beside a check, a review in a field, and a
    key beside them that reads as one (`"Verdict": "FAIL"`, `"verdict ":
    "FAIL"`, `"final_verdict": "FAIL"`, a check's `"Result": "FAIL"`)."""
    yield from _claims(
        {k: v for k, v in final.items() if k not in ("verdict", "checks") and k not in _EVIDENCE},
        None,
        decode_strings=True,
    )
    checks = final.get("checks")
    if not isinstance(checks, list):
        yield from _claims(checks, None, decode_strings=True)
        return
    for item in checks:
        if not isinstance(item, dict):
            yield from _claims(item, None, decode_strings=True)
            continue
        criterion = item.get("criterion")
        known = criterion.strip() if isinstance(criterion, str) else None
        fields = {f: v for f, v in item.items() if f != "result" and f not in _EVIDENCE}
        yield from _claims(fields, known, decode_strings=True)


def _claims(
    value: Any, criterion: str | None, *, decode_strings: bool, loose: bool = False
) -> Iterator[_Claim]:
    """Every verdict and result a decoded value holds, at any depth, with
    the criterion each result belongs to where one is named. A key that only
    contains the word (`draft_verdict`), and every key when `loose` (YAML
    read off prose), counts only with a one-word string value; a word used
    for a verdict (`outcome`) only when that value is PASS or FAIL, and so
    does each word in a list or mapping under such a key. Iterative (a
    value json.loads builds may be nested past the recursion limit) and
    visiting each container once (YAML aliases share them)."""
    stack: list[tuple[Any, str | None, str]] = [(value, criterion, "")]
    seen: set[int] = set()
    decoded = 0
    while stack:
        item, within, under = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            # Key by key: "verdict " and "Verdict" are two entries, not one.
            keys = [(_key(k), v) for k, v in item.items()]
            named = next((v for k, v in keys if k == "criterion"), None)
            here = named.strip() if isinstance(named, str) else within
            for key, inner in keys:
                kind = _kind(key)
                exact = key in ("verdict", "result") and not loose
                if not kind or not (exact or _one_word(inner)):
                    continue
                said = _norm(inner)
                if said not in _WORDS and (key in _VERDICT_LIKE or (loose and kind == "result")):
                    continue  # `result: foo` in prose, `status: done`: no verdict
                yield kind, here if kind == "result" else None, said
            for k, v in item.items():
                if isinstance(k, str) and k in _EVIDENCE:
                    continue
                if under:  # more of what the key above holds, by reviewer or criterion
                    name = k.strip() if under == "result" and isinstance(k, str) else here
                    stack.append((v, name, under))
                    continue
                # A list or mapping under a verdict's or a result's key holds
                # more of them (`"verdicts": ["FAIL"]`, `"results": {"B": "FAIL"}`).
                hint = _kind(_key(k)) if isinstance(v, dict | list) else ""
                stack.append((v, here, hint))
        elif isinstance(item, list):
            stack.extend((v, within, under) for v in item)
        elif under and isinstance(item, str) and _one_word(item) and _norm(item) in _WORDS:
            yield under, within if under == "result" else None, _norm(item)
        elif decode_strings and isinstance(item, str) and decoded < _MAX_DECODED_STRINGS:
            # JSON held in a string (`{"note": "{\"verdict\": \"FAIL\"}"}`).
            stripped = item.strip()
            if stripped[:1] + stripped[-1:] in ("{}", "[]"):
                decoded += 1
                with contextlib.suppress(ValueError, RecursionError):
                    stack.append((json.loads(stripped), within, ""))


def _kind(key: str) -> str:
    """What a key names: a verdict (`final_verdict`, `verdicts`, or a word
    used for one, `outcome`), a result (`check_results`), or neither."""
    if "verdict" in key or key in _VERDICT_LIKE:
        return "verdict"
    return "result" if key.endswith(("result", "results")) else ""


def _one_word(value: Any) -> bool:
    return (
        isinstance(value, str)
        and bool(value.strip())
        and not any(ch.isspace() for ch in value.strip())
    )


def _text_claims(text: str, criteria: Sequence[str]) -> list[_Claim]:
    found: list[_Claim] = [("verdict", None, v) for v in _values(_VERDICT, text, _WORD, bare=True)]
    found += [("result", None, v) for v in _values(_RESULT, text, _RESULT_WORD, bare=False)]
    found += [
        ("verdict", None, v)
        for v in _values(_SYNONYM, text, _SYNONYM_WORD, bare=False)
        if v in _WORDS  # `"status": "open"` states no verdict
    ]
    if criteria:
        pattern, names = _criteria_pattern(tuple(criteria))
        for match in _near(pattern, text, names, _KEY_REACH):
            value = _value(match, bare=False)
            if value is not None:
                found.append(("result", _canonical(criteria, match.group("criterion")), value))
    return found


def _values(
    pattern: re.Pattern[str], text: str, word: re.Pattern[str], *, bare: bool
) -> Iterator[str]:
    for match in _near(pattern, text, word, _KEY_REACH + 30):
        value = _value(match, bare=bare)
        if value is not None:
            yield value


def _value(match: re.Match[str], *, bare: bool) -> str | None:
    """What a matched entry says. A bare word counts for a verdict (`verdict:
    REJECT`); for a result or a criterion only when it means PASS or FAIL,
    as those words are common in code and prose (`result = None`)."""
    if match.group("negated") is not None:
        return "FAIL"
    quoted = match.group("quoted")
    if quoted is not None:
        return _norm(quoted)
    found = match.group("alias") or match.group("word") or match.group("mark")
    if found is not None:
        return _norm(found)
    word = _norm(match.group("bare"))
    return word if bare or word in ("PASS", "FAIL") else None


def _heading_value(match: re.Match[str]) -> str:
    if match.group("negated") is not None:
        return "FAIL"
    return _norm(match.group("word") or match.group("mark"))


@functools.lru_cache(maxsize=64)
def _criteria_pattern(criteria: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A result given to one of the final review's criteria by name
    (`- completeness: FAIL`, `| completeness | FAIL |`), and the names alone."""
    names = "|".join(
        re.escape(c).replace("\\-", "[-_ ]") for c in sorted(criteria, key=len, reverse=True)
    )
    pattern = re.compile(_KEY.format(name=f"(?P<criterion>{names})") + _VALUE, _FLAGS)
    return pattern, re.compile(names, re.IGNORECASE)


def _canonical(criteria: Sequence[str], written: str) -> str:
    def plain(name: str) -> str:
        return re.sub(r"[-_ ]", "-", name.lower())

    return next((c for c in criteria if plain(c) == plain(written)), written)


def _unescaped(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        hex4, hex8, hex2, octal, other = match.groups()
        if other is not None:
            return _SIMPLE_ESCAPES.get(other, other)
        code = int(hex4 or hex8 or hex2, 16) if octal is None else int(octal, 8)
        return chr(code) if code <= 0x10FFFF else match.group()

    return _ESCAPE.sub(one, text)


def _readable(text: str) -> str:
    """The text as a reader sees it: escapes decoded (again, for text escaped
    twice), entities decoded, compatibility forms folded, invisibles and
    struck-out words gone. Each step runs only when the text holds what it
    decodes (the gate's hot path is plain ASCII prose around a fence)."""
    for _ in range(4):
        if "\\" not in text:
            break
        decoded = _unescaped(text)
        if decoded == text:
            break
        text = decoded
    if "&" in text:
        import html  # only here: santa validate's cold start stays small

        text = html.unescape(text)
    if not text.isascii():
        text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    if "~~" in text:
        text = _STRUCK.sub("", text)
    return text


def _yaml_regions(text: str) -> list[Any]:
    """What the fenced blocks and paragraphs outside the final review decode
    to as YAML (a superset of JSON), where they mention a verdict or a result:
    a YAML draft's checks are then compared criterion by criterion."""
    regions = [m.group(2) for m in _FENCE_BLOCK.finditer(text)]
    regions += _PARAGRAPH_BREAK.split(text)
    wanted = [r for r in regions if len(r) <= _MAX_REGION and _MENTION.search(r)]
    if not wanted:
        return []
    import yaml  # only here: most replies hold nothing to look at, and yaml is slow to import

    found: list[Any] = []
    for region in wanted[:_MAX_REGIONS]:
        try:
            value = safe_load(region)  # an alias bomb is a ValueError: the text search covers it
        except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError):
            continue
        if isinstance(value, dict | list):
            found.append(value)
    return found
