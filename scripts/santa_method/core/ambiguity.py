"""Does a reply say anything besides its final review that disagrees with it?

A reviewer may draft a FAIL, think again and send a PASS; or a reply steered
by the text under review may hide a second review where a reader would not
look. Which review the reviewer meant is not for the helper to guess, so a
reply holding another verdict, or another result for a check, is ambiguous
(ARCHITECTURE.md, "Extraction"). What counts as "another review" is looked
for in two ways, both fail-closed:

- Structure. Every object decoded from the reply besides the final review
  (earlier top-level objects, objects in arrays, JSON held in their strings,
  YAML blocks and paragraphs), and everything nested inside the final review
  (a `draft` beside a check), is walked for `verdict` and `result` keys.
- Text. Outside the final review the raw text is searched for a verdict or
  a result written in any notation a reviewer drafts in (JSON, a Python or
  Ruby dict, YAML with tags, anchors or block scalars, TOML, Markdown keys),
  after decoding what hides letters: escapes (`\\u0041`, `\\U00000041`,
  `\\x41`, `\\101`, `\\"`), HTML entities, compatibility forms (NFKC) and
  invisible characters (`F\\u200bAIL`).

Strings inside the final review are never searched: a check's evidence may
quote an output that itself says `verdict: FAIL`, and that quote is evidence,
not a second review.
"""

from __future__ import annotations

import contextlib
import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

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

# A key as a reviewer drafts it: bare, quoted either way, in Markdown bold or
# code, or a Ruby symbol; then `:`, `=`, `=>` or `:=`; then YAML's tags,
# anchors or a block scalar's header before the value.
_KEY = r"""
    (?<![\w\\])[*_`"':]*{name}[*_`"']*
    [ \t]*(?:=>|->|:=|[:=])\s*
    (?:(?:!!?[\w/:.-]*|&[\w-]+)\s+)*
    (?:[|>][1-9]?[+-]?[1-9]?[ \t]*(?:\#[^\n]*)?\n\s*)?
    [*_`]*[ \t]*
"""
# Its value: anything quoted, a YAML alias (whose text lies elsewhere), PASS
# or FAIL in any case however the sentence goes on, or one bare word that
# ends the entry (`verdict: REJECT`, `{verdict: REJECT}`): a word followed by
# more prose ("verdict: the output holds") is a sentence, not an entry.
_VALUE = r"""
    (?:(?P<q>\"\"\"|'''|["'])(?P<quoted>.*?)(?P=q)
      |(?P<alias>\*[\w-]+)
      |(?P<word>PASS|FAIL)\b
      |(?P<bare>[^\W\d][\w-]*)(?=[ \t]*(?:$|[\r\n,;:.!?)\]}*`'"<>|-]))
    )
"""
_VERDICT = re.compile(_KEY.format(name="verdict") + _VALUE, re.IGNORECASE | re.VERBOSE)
_RESULT = re.compile(_KEY.format(name="result") + _VALUE, re.IGNORECASE | re.VERBOSE)
_MENTION = re.compile(r"verdict|result", re.IGNORECASE)
_FENCE_BLOCK = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.DOTALL)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")

# Bounds on the structural search outside the final review, so a reply built
# to be slow stays linear: the text search above still covers what they skip.
_MAX_REGION = 64 * 1024
_MAX_REGIONS = 32
_MAX_DECODED_STRINGS = 64

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
    outside = _readable(text[: span[0]] + "\n" + text[span[1] :])
    claims = list(_inside(final))
    for value in others:
        claims += _claims(value, None, decode_strings=True)
    for value in _yaml_regions(outside):
        # YAML reads prose too ("Verdict: the output holds" is a mapping): a
        # value of more than one word is a sentence, not a draft's entry.
        claims += [c for c in _claims(value, None, decode_strings=True) if _one_word(c[2])]
    claims += [("verdict", None, _matched(m)) for m in _VERDICT.finditer(outside)]
    claims += [("result", None, _matched(m)) for m in _RESULT.finditer(outside)]
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


def _ambiguous(what: str) -> str:
    return (
        f"the reply holds more than one review and they disagree ({what}): it is ambiguous; "
        "send exactly one review"
    )


def _norm(value: Any) -> str:
    """A verdict or result as compared: a string stripped and upper-cased;
    anything else (a list, a number) as its JSON, which matches no verdict."""
    if isinstance(value, str):
        return value.strip().upper()
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _one_word(value: str) -> bool:
    return bool(value) and not any(ch.isspace() for ch in value)


def _key(key: Any) -> str:
    return key.strip(" *_`\"':").lower() if isinstance(key, str) else ""


def _results_of(final: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = {}
    checks = final.get("checks")
    for item in checks if isinstance(checks, list) else ():
        if isinstance(item, dict) and isinstance(item.get("criterion"), str):
            results.setdefault(item["criterion"].strip(), _norm(item.get("result")))
    return results


def _inside(final: dict[str, Any]) -> Iterator[_Claim]:
    """What is nested in the final review besides its own verdict and its
    checks' own results: a draft beside a check, a review in a field."""
    for key, value in final.items():
        if key == "verdict":
            continue
        if key == "checks" and isinstance(value, list):
            for item in value:
                if not isinstance(item, dict):
                    yield from _claims(item, None, decode_strings=False)
                    continue
                criterion = item.get("criterion")
                known = criterion.strip() if isinstance(criterion, str) else None
                for field, inner in item.items():
                    if field != "result":
                        yield from _claims(inner, known, decode_strings=False)
            continue
        yield from _claims(value, None, decode_strings=False)


def _claims(value: Any, criterion: str | None, *, decode_strings: bool) -> Iterator[_Claim]:
    """Every verdict and result a decoded value holds, at any depth, with
    the criterion each result belongs to where one is named. Iterative (a
    value json.loads builds may be nested past the recursion limit) and
    visiting each container once (YAML aliases share them)."""
    stack: list[tuple[Any, str | None]] = [(value, criterion)]
    seen: set[int] = set()
    decoded = 0
    while stack:
        item, within = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            keys = {_key(k): v for k, v in item.items()}
            named = keys.get("criterion")
            here = named.strip() if isinstance(named, str) else within
            if "verdict" in keys:
                yield "verdict", None, _norm(keys["verdict"])
            if "result" in keys:
                yield "result", here, _norm(keys["result"])
            stack.extend((v, here) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, within) for v in item)
        elif (
            decode_strings
            and isinstance(item, str)
            and decoded < _MAX_DECODED_STRINGS
            and item.lstrip()[:1] in ("{", "[")
        ):
            # JSON held in a string (`{"note": "{\"verdict\": \"FAIL\"}"}`).
            decoded += 1
            with contextlib.suppress(ValueError, RecursionError):
                stack.append((json.loads(item), within))


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
    twice), entities decoded, compatibility forms folded, invisibles gone.
    Each step runs only when the text holds what it decodes (the gate's hot
    path is plain ASCII prose around a fence)."""
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
    return text


def _matched(match: re.Match[str]) -> str:
    found = match.group("quoted")
    if found is None:
        found = match.group("alias") or match.group("word") or match.group("bare")
    return _norm(found)


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

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found: list[Any] = []
    for region in wanted[:_MAX_REGIONS]:
        try:
            value = yaml.load(region, Loader=loader)  # a safe loader, C where available
        except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError):
            continue
        if isinstance(value, dict | list):
            found.append(value)
    return found
