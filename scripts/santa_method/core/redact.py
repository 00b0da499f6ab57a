"""Redact secrets before text leaves the process for people to read.

The log, the escalation report and the assignment copies meant for people
quote the output under review, and outputs do contain keys. Detection is
`detect-secrets` (Yelp's maintained detector): each of its built-in plugins
is run line by line, and every value it finds becomes `[REDACTED:<type>]`,
e.g. `[REDACTED:AWS Access Key]`. A few precise patterns it lacks are added
(`EXTRA_PATTERNS` below: Anthropic, OpenAI and Hugging Face keys, `Bearer`
tokens, fine-grained GitHub tokens, Google API keys, and whole PEM private-key blocks, whose body
lines no per-line detector sees), and the userinfo of a URL with a password
(`_url_credentials`), which detect-secrets' pattern misses when the password
holds `!`, `$`, `#`, `@` or another of the characters a URL reserves.

Deliberate departures from `detect-secrets`' own scan:

- The two entropy plugins (`Base64HighEntropyString`,
  `HexHighEntropyString`) are left out: they look only inside quoted
  strings, and on free text they flag exactly what the log must keep
  readable (sha256 digests, canaries, run ids). Our own detector of bare
  high-entropy tokens takes their place (`_BARE`, "High Entropy Token"): a
  run of 32 or more base64 or base64url characters whose Shannon entropy
  is at least `ENTROPY_BITS` bits a character. It catches what reviewers
  quote without its `KEY=` context (a bare AWS secret key, one line of a
  PEM body), and spares any token made only of hex, digits and words
  split by `-`, `_` or `/`: git SHAs, sha256 digests, UUIDs, canaries,
  run ids, paths and ordinary identifiers. A token mixing `/` with `-` or
  `_` is not one base64 value, so only its long runs of one alphabet are
  judged: a temporary folder's random name does not blank a path, and a
  key glued to a word or inside a path is still caught.
- `IPPublicDetector` is left out: an address is not a credential, and
  redacting it would garble evidence quotes.
- Plugins are called directly (`analyze_string`), never `analyze_line`, so
  no plugin can try to *verify* a key over the network, and the process-wide
  `detect_secrets` settings are never touched.
- The inline allowlist (`pragma: allowlist secret`) is not honoured: the
  text being redacted is untrusted and must not be able to switch redaction
  off.

A detect-secrets plugin runs only on a window where its triggers
(`core.plugin_screen`: the prefix or keyword its own patterns require) are
found, and detect-secrets is imported only when some plugin's are: the
import costs more than the rest of `santa validate`, and most printed text
(a verdict, criterion ids, a reviewer's sentence) can hold nothing a plugin
finds.

A regex detector's match is widened to the whole token around it (letters,
digits, `_`, `-`, trailing `=`), because some plugins capture only a prefix
(GitHub's pattern captures `ghp`). `detect_secrets` is imported, and each
pattern compiled, on first use, so importing this module costs almost
nothing on the CLI's cold start.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any, NamedTuple, TypeVar, cast

from santa_method.core.plugin_screen import TRIGGERS, could_flag, fold

T = TypeVar("T")


class _Lazy:
    """A regular expression compiled on first use. Compiling the two dozen
    patterns below at import cost the CLI's cold start most of this module's
    import, and printing a verdict uses few of them. The compiled pattern's
    attributes are kept on first use, so later calls cost what a compiled
    pattern's do."""

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        value = getattr(re.compile(self._source, self._flags), name)
        setattr(self, name, value)
        return value


def _lazy(source: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _Lazy(source, flags))


#: detect-secrets plugins left out, by class name (see the module docstring).
EXCLUDED_PLUGINS = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
)

#: Formats detect-secrets 1.5 misses. The secret is group 1 when the pattern
#: has one (the rest is context), else the whole match.
EXTRA_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Anthropic API Key", _lazy(r"sk-ant-[A-Za-z0-9_\-]{20,}")),
    ("GitHub Token", _lazy(r"github_pat_[A-Za-z0-9_]{22,}")),
    ("Google API Key", _lazy(r"AIza[0-9A-Za-z_\-]{35}")),
    # `.env` style assignments to a secret-sounding name: the value goes.
    (
        "Secret Keyword",
        _lazy(
            r"(?i)\b[A-Z0-9_]*(?:SECRET|PASSWORD|PASSWD|PWD|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY)"
            r"[A-Z0-9_]*[ \t]*[=:][ \t]*['\"]?((?=[^\s'\"]*[A-Za-z])[^\s'\"]{8,})"
        ),
    ),
    ("Hugging Face Token", _lazy(r"\bhf_[A-Za-z0-9]{30,}")),
    ("OpenAI API Key", _lazy(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{32,}")),
    # A bearer token holds a digit; "Bearer authentication-scheme" in prose does not.
    (
        "Bearer Token",
        _lazy(r"\bBearer[ \t]+((?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{16,}=*)", re.I),
    ),
)

#: Words one of which (in lower case) each case-ignoring pattern above needs:
#: it is searched only in a window whose folded text (`plugin_screen.fold`)
#: holds one, as a case-ignoring search costs many times a literal one.
EXTRA_WORDS = {
    "Secret Keyword": ("secret", "passw", "pwd", "token", "key"),
    "Bearer Token": ("bearer",),
}

_PEM = _lazy(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)",
    re.DOTALL,
)
#: Bare tokens: 32 or more base64 / base64url characters (padding aside).
_BARE = _lazy(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{32,}(={0,2})(?![A-Za-z0-9+/=_\-])")
#: Runs of one base64 alphabet inside a token that mixes both (see below).
_ONE_ALPHABET = _lazy(r"[A-Za-z0-9+/]{32,}|[A-Za-z0-9_\-]{32,}")
#: What cannot be inside a URL as santa judges one (see `_in_url`).
_URL_START = _lazy(r"[\s\"'`,;<>()\[\]{}|\\^]")
#: Where a URL ends, and what a URL's user name cannot hold (see `_url_credentials`).
_URL_END = _lazy(r"\s")
_NOT_A_USER = _lazy(r"[/?#\"'`<>\[\]{}|\\^]")
_PORT_THEN_PATH = _lazy(r"[0-9]{1,5}/")
#: A URL path's segments, judged one by one.
_SEGMENT = _lazy(r"[A-Za-z0-9+_\-]{32,}")
#: A token spelt with %XX escapes (a URL-encoded key), judged decoded.
_PERCENT = _lazy(
    r"(?<![A-Za-z0-9+/_%\-])(?:[A-Za-z0-9+/_\-]|%[0-9A-Fa-f]{2}){32,}(?![A-Za-z0-9+/_%\-])"
)
_ESCAPE = _lazy(r"%([0-9A-Fa-f]{2})")
_DECODED_TOKEN = _lazy(r"[A-Za-z0-9+/_\-]+={0,2}")
#: The humps of a name in CamelCase or camelCase: a word, an acronym, a number
#: (`Base64HighEntropyStringDetectorPlugin`, `shouldReturn404WhenUserIsNotFound`).
_HUMP = _lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_VOWELS = frozenset("aeiouAEIOU")
#: Words names are made of that hold no vowel: acronyms written as words
#: (`XMLHttpRequest`), `By`, a plural `s` (`K8s`), a version's `v` (`IPv6`).
#: Listed, not guessed: random letters make vowel-less humps all the time.
# fmt: off
_VOWELLESS_WORDS = frozenset({
    "by", "my", "s", "v", "try", "dry", "sync", "crypt", "nth",
    "http", "https", "xml", "html", "sql", "rpc", "grpc", "tcp", "udp", "dns", "css",
    "pdf", "png", "jpg", "svg", "rgb", "db", "js", "kb", "mb", "gb", "ms", "px",
    "msg", "svc", "cfg", "src", "dst", "pkg", "ctx", "mgr", "hdr", "std", "fn", "cb", "tx", "rx",
})
# fmt: on
#: A digest or a number with a short unit (a token of one part).
_DIGEST = _lazy(r"[0-9]+[A-Za-z]{0,2}|[0-9a-fA-F]+")
#: A part of a token that reads as an identifier, a number or a digest.
_PLAIN_PART = _lazy(r"[A-Za-z]*[0-9]*|[0-9]+[A-Za-z]{0,2}|[0-9a-fA-F]+")
#: Bits a character: random base64 of 32 characters scores about 4.6 (1 in
#: 100 below 4.25), of 64 about 5.2; long identifiers score 3.5 to 4.
ENTROPY_BITS = 4.0
_TOKEN_CHAR = _lazy(r"[A-Za-z0-9_\-]")
_WORD_CHAR = _lazy(r"[A-Za-z0-9_]")
# Lines longer than this are scanned in overlapping windows so one huge
# minified line cannot make a keyword regex crawl.
_WINDOW = 4096
_OVERLAP = 512


class Finding(NamedTuple):
    """A secret's span in the scanned text and the detector's name for it."""

    start: int
    end: int
    type: str


def redact_text(text: str) -> str:
    """Return `text` with every detected secret replaced by `[REDACTED:<type>]`."""
    if not isinstance(text, str) or not text:
        return text
    findings = find_secrets(text)
    if not findings:
        return text
    out: list[str] = []
    pos = 0
    for f in findings:
        out.append(text[pos : f.start])
        out.append(f"[REDACTED:{f.type}]")
        pos = f.end
    out.append(text[pos:])
    return "".join(out)


def redact_json(value: T) -> T:
    """`value` (JSON-shaped data) with every string redacted: what santa prints
    with `--json` and writes as reports. Keys and non-strings pass unchanged."""
    return redact(value)


def redact(value: T, *, skip_keys: frozenset[str] = frozenset()) -> T:
    """Redact strings anywhere inside dicts, lists and tuples; other values pass.

    Keys are never altered. A dict entry whose key is in `skip_keys` (at any
    depth) is copied untouched: the log uses this for its own structural
    fields (ids, hashes) so redaction can never break a join.
    """
    if isinstance(value, str):
        return redact_text(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {  # type: ignore[return-value]
            k: v if k in skip_keys else redact(v, skip_keys=skip_keys) for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, skip_keys=skip_keys) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(redact(v, skip_keys=skip_keys) for v in value)  # type: ignore[return-value]
    return value


def find_secrets(text: str) -> list[Finding]:
    """Every secret span in `text`, sorted and non-overlapping (overlaps merged)."""
    found: list[Finding] = [Finding(m.start(), m.end(), "Private Key") for m in _PEM.finditer(text)]
    found += [Finding(*span, "High Entropy Token") for span in _bare_tokens(text)]
    found += [Finding(*span, "High Entropy Token") for span in _percent_tokens(text)]
    found += [Finding(*span, "Basic Auth Credentials") for span in _url_credentials(text)]
    offset = 0
    for line in text.splitlines(keepends=True):
        for start, end, kind in _scan_line(line):
            found.append(Finding(offset + start, offset + end, kind))
        offset += len(line)
    return _merge(found)


def _bare_tokens(text: str) -> Iterator[tuple[int, int]]:
    for m in _BARE.finditer(text):
        token = m.group()[: m.start(1) - m.start()]
        if "/" in token and _in_url(text, m.start()):
            # A URL's path: its segments are separate values (a random one may
            # be a capability link's id and goes; `com/file/d/` stays).
            for run in _SEGMENT.finditer(token):
                if _is_random(run.group()):
                    yield m.start() + run.start(), m.start() + run.end()
        elif "/" in token and ("-" in token or "_" in token):
            # base64 spells with + and /, base64url with - and _: a token that
            # mixes them is not one value (a path through a temp folder's
            # random name, a key glued to a word), so only the long runs of
            # one alphabet inside it can be keys.
            for run in _ONE_ALPHABET.finditer(token):
                if _is_random(run.group()):
                    yield m.start() + run.start(), m.start() + run.end()
        elif _is_random(token):
            yield m.span()


def _url_credentials(text: str) -> Iterator[tuple[int, int]]:
    """The userinfo of every URL that has a password (`scheme://user:pass@host`),
    whatever the password's characters: it may hold `@`, `:`, `/`, `#`, `!`
    or `$`, so no URL grammar finds where it ends. A URL ends at whitespace;
    its userinfo at the last `@` in it, and holds a password when a `:`
    precedes that `@` and the user before the `:` holds none of `/ ? #`
    (those end a host, so the `:` and `@` are a path's), nor is the password
    a port and a `/` alone (`http://localhost:5173/@vite/client`). A user
    without a password (`https://user@host`) and an address without a scheme
    (`ann@example.com`, `git@github.com:org/repo`) are no credential."""
    at = text.find("://")
    stop = last = -1
    while at >= 0:
        start = at + 3
        if start > stop:  # the first URL of this run of non-space characters
            end = _URL_END.search(text, start)
            stop = end.start() if end else len(text)
            last = text.rfind("@", start, stop)
        colon = text.find(":", start, last) if last > start else -1
        if (
            colon >= 0
            and colon + 1 < last
            and not _NOT_A_USER.search(text, start, colon)
            and not _PORT_THEN_PATH.fullmatch(text, colon + 1, last)
        ):
            yield start, last
        at = text.find("://", start)


def _in_url(text: str, start: int) -> bool:
    """Whether `start` lies in a URL's host or path: `://` earlier in the
    same URL, and no `?`, `#`, `=` or `&` since (a query's value may be a
    base64 key, `/` included, and is judged whole). A URL ends at a space,
    a quote, a comma or a bracket, so a key after it in JSON or a list is
    judged whole too."""
    if start == 0 or text[start - 1] not in "/.":  # not where a host or path part begins
        return False
    before = _URL_START.split(text[max(0, start - 2048) : start])[-1]
    scheme = before.find("://")
    return scheme >= 0 and not any(c in before[scheme:] for c in "?#=&")


def _percent_tokens(text: str) -> Iterator[tuple[int, int]]:
    """URL-encoded keys (`sig=Zm9v...%2B...%3D%3D`): a `%XX` splits the
    token for `_BARE`, so the whole spelling is judged decoded."""
    if "%" not in text:
        return
    for m in _PERCENT.finditer(text):
        if "%" not in m.group():
            continue
        decoded = _ESCAPE.sub(lambda e: chr(int(e.group(1), 16)), m.group())
        if _DECODED_TOKEN.fullmatch(decoded) and _is_random(decoded.rstrip("=")):
            yield m.span()


def _is_name(token: str) -> bool:
    """Whether the whole token is one name in CamelCase: every word holds a
    vowel (as written words do and random letters mostly do not) or is one
    of the few vowel-less words names use, words with a vowel make at least
    half of it, acronyms and numbers are short. Any separator makes it
    something else."""
    at = words = 0
    for hump in _HUMP.finditer(token):
        if hump.start() != at:
            return False
        word = hump.group()
        if word[-1].islower():
            if _VOWELS.intersection(word):
                words += len(word)
            elif word.lower() not in _VOWELLESS_WORDS:
                return False
        elif len(word) > (4 if word[0].isdigit() else 5):
            return False
        at = hump.end()
    # Humps need a capital, and words make most of a name: random lower-case
    # letters and digits, or capitals and digits, are no CamelCase.
    return at == len(token) and words * 2 >= len(token) and not token.islower()


def _is_random(token: str) -> bool:
    if _is_name(token):
        return False
    parts = re.split(r"[-_/]", token)
    # Parts between separators are names' words; a token of one part is a
    # name only as `_is_name` reads it (random letters are no identifier).
    plain = _PLAIN_PART if len(parts) > 1 else _DIGEST
    if all(plain.fullmatch(part) for part in parts):
        return False
    return _entropy(token) >= ENTROPY_BITS


def _entropy(token: str) -> float:
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in Counter(token).values())


def _scan_line(line: str) -> Iterator[tuple[int, int, str]]:
    if len(line) <= _WINDOW:
        yield from _scan_window(line)
        return
    step = _WINDOW - _OVERLAP
    for base in range(0, len(line), step):
        for start, end, kind in _scan_window(line[base : base + _WINDOW]):
            yield base + start, base + end, kind


def _scan_window(line: str) -> Iterator[tuple[int, int, str]]:
    if len(line.strip()) < 8:  # nothing this short is a credential worth a regex pass
        return
    folded = fold(line)
    for kind, pattern in EXTRA_PATTERNS:
        words = EXTRA_WORDS.get(kind)
        if words is not None and not any(w in folded for w in words):
            continue
        for m in pattern.finditer(line):
            yield (*m.span(1 if pattern.groups else 0), kind)
    could = could_flag(line, folded)
    if not could:  # then detect-secrets is not even imported
        return
    for plugin in _plugins():
        if type(plugin).__name__ not in could and type(plugin).__name__ in TRIGGERS:
            continue
        denylist = getattr(plugin, "denylist", None)
        if denylist is not None:
            yield from _regex_plugin_spans(plugin, denylist, line)
        else:
            yield from _value_plugin_spans(plugin, line)


def _regex_plugin_spans(plugin: Any, denylist: Any, line: str) -> Iterator[tuple[int, int, str]]:
    for pattern in denylist:
        for m in pattern.finditer(line):
            groups = [g for g in range(1, (pattern.groups or 0) + 1) if m.group(g)]
            start, end = m.span(groups[-1]) if groups else m.span()
            start, end = _trim(line, start, end)
            if start >= end or _filtered(plugin, line[start:end], line):
                continue
            yield (*_widen(line, start, end), plugin.secret_type)


def _value_plugin_spans(plugin: Any, line: str) -> Iterator[tuple[int, int, str]]:
    """Plugins without a denylist (the keyword detector) report values, not spans:
    redact each value wherever it stands as a whole word of the line."""
    try:
        values = set(plugin.analyze_string(line))
    except Exception:  # a plugin bug must not stop the write; the others still run
        return
    for value in values:
        if not value or len(value) < 3 or _filtered(plugin, value, line, keyword=True):
            continue
        for m in re.finditer(re.escape(value), line):
            before = line[m.start() - 1] if m.start() else ""
            after = line[m.end()] if m.end() < len(line) else ""
            if _WORD_CHAR.fullmatch(before or " ") or _WORD_CHAR.fullmatch(after or " "):
                continue
            yield m.start(), m.end(), plugin.secret_type


def _trim(line: str, start: int, end: int) -> tuple[int, int]:
    """Drop the delimiters some patterns include in their match (quotes, `=`, spaces)."""
    while start < end and line[start] in " \t\"'=:`":
        start += 1
    while end > start and line[end - 1] in " \t\"'`\r\n":
        end -= 1
    return start, end


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and _TOKEN_CHAR.fullmatch(line[start - 1]):
        start -= 1
    while end < len(line) and _TOKEN_CHAR.fullmatch(line[end]):
        end += 1
    while end < len(line) and line[end] == "=":
        end += 1
    return start, end


def _merge(found: list[Finding]) -> list[Finding]:
    merged: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end, f.type)):
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            if f.end > last.end:
                merged[-1] = Finding(last.start, f.end, last.type)
            continue
        merged.append(f)
    return merged


def _filtered(plugin: Any, value: str, line: str, keyword: bool = False) -> bool:
    """detect-secrets' own default heuristics for false positives, applied by hand."""
    for check in _value_filters():
        if check(value):
            return True
    if keyword:
        from detect_secrets.filters import heuristic

        if heuristic.is_likely_id_string(value, line, plugin) or heuristic.is_indirect_reference(
            line
        ):
            return True
    return False


@cache
def _value_filters() -> tuple[Callable[[str], bool], ...]:
    from detect_secrets.filters import heuristic

    return (
        heuristic.is_sequential_string,
        heuristic.is_potential_uuid,
        heuristic.is_templated_secret,
        heuristic.is_prefixed_with_dollar_sign,
        heuristic.is_not_alphanumeric_string,
    )


@cache
def _plugins() -> tuple[Any, ...]:
    """One instance of each built-in detect-secrets plugin, in a fixed order."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: Iterable[type[Any]] = get_mapping_from_secret_type_to_class().values()
    chosen = sorted(
        (c for c in classes if c.__name__ not in EXCLUDED_PLUGINS), key=lambda c: c.__name__
    )
    return tuple(c() for c in chosen)
