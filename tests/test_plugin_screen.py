"""The screen that spares detect-secrets' import (issue 33, item 7) is conservative.

`core.plugin_screen` says which plugins could flag a text without importing
them. It may say "could" too often, never too rarely: for every pattern of
every plugin redaction runs, texts are generated from the pattern itself
(hypothesis `from_regex`, with any text around the match), and whenever the
plugin finds something in a text its triggers must all be found there. Random
texts built from near-misses, and the real secret samples of the redaction
tests, are held to the same rule, and so are redaction's own case-ignoring
patterns and their words (`EXTRA_WORDS`). Then the point of it: what a failing
review's lines print loads no detect-secrets, and text that may hold a
plugin's secret still does (`tests/test_imports.py` runs `santa validate`).
"""

from __future__ import annotations

import json
import re
import string
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from santa_method.core.plugin_screen import TRIGGERS, could_flag, fold
from santa_method.core.redact import EXTRA_PATTERNS, EXTRA_WORDS, _plugins, redact_text

PLUGINS = {type(p).__name__: p for p in _plugins()}


def _patterns(plugin: Any) -> list[Any]:
    """The patterns a plugin searches with, as redaction calls it."""
    if getattr(plugin, "denylist", None) is not None:
        return list(plugin.denylist)
    # The keyword plugin's `analyze_string` (what redaction calls) uses these.
    from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    return list(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)


def _flags(plugin: Any, text: str) -> bool:
    """Whether the plugin itself finds anything in `text`, before any of
    redaction's own filters (which only drop findings)."""
    if getattr(plugin, "denylist", None) is not None:
        return any(p.search(text) for p in plugin.denylist)
    return any(True for _ in plugin.analyze_string(text))


def _assert_screened(text: str) -> None:
    could = could_flag(text)
    missed = [
        name for name, plugin in PLUGINS.items() if _flags(plugin, text) and name not in could
    ]
    assert missed == [], f"{missed} flag {text!r} but the screen says they cannot"


def test_every_plugin_redaction_runs_has_triggers() -> None:
    # A plugin an upgrade adds, or one redaction stops leaving out, needs its
    # triggers written before the screen may spare the import.
    assert set(TRIGGERS) == set(PLUGINS)


CASES = [
    pytest.param(name, i, id=f"{name}-{i}")
    for name, plugin in sorted(PLUGINS.items())
    for i in range(len(_patterns(plugin)))
]


@pytest.mark.parametrize(("name", "index"), CASES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_texts_drawn_from_each_plugin_pattern_are_screened_in(
    name: str, index: int, data: st.DataObject
) -> None:
    pattern = _patterns(PLUGINS[name])[index]
    text = data.draw(st.from_regex(pattern))
    assert pattern.search(text)  # the draw matches the plugin's own pattern
    _assert_screened(text)


# Pieces of what the plugins look for, so random texts come near their matches.
FRAGMENTS = [
    "AKIA", "ASIA", "aws", "AWS_", "AKC", "AP1", "AccountKey=", "://", "@", ":", "cl", "Cloudant",
    "ghp_", "glpat-", "GR1348941", "key", "Key", "KEY", "api_key", "pass", "password", "passwd",
    "db_pass", "pwd", "secret", "contraseña", "token", "ibm_", "cos_", "eyJ", "-us1", "_authToken=",
    "T3BlbkFJ", "BEGIN RSA PRIVATE KEY", "PuTTY-User-Key-File-2", "pypi-AgEIcHlwaS5vcmc", "SG.",
    "xoxb-1-", "https://hooks.slack.com/services/T", "softlayer", "sl_", "sq0csp-", "sk_live_",
    "12345678:", "AC", "SK", "M", "=", ": ", "= ", "\"", "'", "`", ";", "=>", ":=", "==",
    "\u017f", "\u212a", "\u0131",  # long s, Kelvin sign, dotless i: taken for s, k, i when case is ignored
]  # fmt: skip
_RUNS = st.sampled_from(["0123456789abcdef", "abcdefghijklmnopqrstuvwxyz", "A1b2C3d4-_"]).flatmap(
    lambda alphabet: st.text(alphabet, min_size=1, max_size=90)
)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | _RUNS | st.text(max_size=6), max_size=14))
def test_random_texts_near_the_plugins_patterns_are_screened_in(parts: list[str]) -> None:
    _assert_screened("".join(parts))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_screened_in_when_a_plugin_flags_it(text: str) -> None:
    _assert_screened(text)


# The real (fake, planted) secrets the redaction tests use, in context.
SAMPLES = [
    "AWS_ACCESS_KEY_ID=AKIAZ3MSJV4WTKQX7ABC",
    'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
    'token: "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"',
    "url = https://admin:s3cr3tP4ssw0rd@db.example.com/app",
    'password = "correct-horse-battery"',
    "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe sk_live_abcdefghijklmnopqrstuvwx here",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "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",
    "AKCp8ihpFnGZpiPTdBWfDyTW1QH7WdpF6AuhiTnLj5kj8JZ9y2EHKHg9jHmYrhG5A8oHPFNDD",
    'ibm_cloud_iam_api_key = "abcdefghijklmnopqrstuvwxyz0123456789ABCD_-"',
    "-----BEGIN RSA PRIVATE KEY-----",
    "DefaultEndpointsProtocol=https;AccountName=x;AccountKey="
    "lJzRc1YdHaAA2KCNJJ1tkYwF/+mKK6Ygw0NGe170Xu592euJv2wYUtBlV8z+qnlcNQSnIYVTkLWntUO1F8j8rQ==",
    "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "mailchimp 0123456789abcdef0123456789abcdef-us12",
    "twilio AC0123456789abcdef0123456789abcdef",
    "telegram 110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "discord MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "sq0csp-0123456789ABCDEFGHIJKLmnopqrstuvwxyz_-01234",
    "glpat-0123456789abcdefghij",
    "pypi-AgEIcHlwaS5vcmc" + "A" * 70,
    'cloudant_password = "' + "0123456789abcdef" * 4 + '"',
    'softlayer_api_key = "' + "0123456789abcdef" * 4 + '"',
    'ibm_cos_secret_access_key = "' + "0123456789abcdef" * 3 + '"',
]


@pytest.mark.parametrize("text", SAMPLES)
def test_real_secret_samples_are_screened_in_and_still_redacted(text: str) -> None:
    flagged = [name for name, plugin in PLUGINS.items() if _flags(plugin, text)]
    assert flagged, "each sample is one some plugin flags"
    _assert_screened(text)
    assert "[REDACTED:" in redact_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "valid review, verdict FAIL",
        "  issue [technical-correctness] The third example calls a flag the tool does not "
        "have, so it fails at runtime. (verified)",
        "  issue [internal-consistency] The text promises combined counts on one line. (verified)",
        "The API share does not match the spec's data: 40 of the 160 respondents is 25 %.",
        "You can ask for a full refund within 60 days of delivery.",
    ],
)
def test_what_a_failing_review_prints_could_flag_nothing(text: str) -> None:
    assert could_flag(text) == frozenset()


# -- the import it spares ---------------------------------------------------------

PROBE = """
import json, sys
from santa_method.core.redact import redact_text
shown = redact_text(sys.argv[1])
print(json.dumps({"shown": shown, "loaded": "detect_secrets" in sys.modules}))
"""


def _probe(text: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, text], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_long_criterion_ids_load_no_detect_secrets() -> None:
    text = "  issue [technical-correctness] a flag the tool lacks (verified)\n"
    assert _probe(text) == {"shown": text, "loaded": False}


def test_text_that_may_hold_a_plugins_secret_still_loads_it() -> None:
    report = _probe('db_password = "Zq8!wXv3Lm"')
    assert report["loaded"] is True
    assert report["shown"] == 'db_password = "[REDACTED:Secret Keyword]"'


# -- the folding the case-ignoring triggers search --------------------------------


def test_folding_finds_what_ignoring_case_finds() -> None:
    """Every character a case-ignoring search takes for an ASCII letter folds
    to that letter, and folding keeps the text's length (spans still match)."""
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    folded = fold(every)
    assert len(folded) == len(every)
    for letter in string.ascii_lowercase:
        for m in re.finditer(f"(?i){letter}", every):
            assert folded[m.start()] == letter, (hex(ord(m.group())), letter)


@pytest.mark.parametrize("kind", sorted(EXTRA_WORDS))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_redactions_own_case_ignoring_patterns_are_screened_in(
    kind: str, data: st.DataObject
) -> None:
    pattern = dict(EXTRA_PATTERNS)[kind]
    text = data.draw(st.from_regex(pattern.pattern, fullmatch=False).filter(pattern.search))
    assert any(word in fold(text) for word in EXTRA_WORDS[kind])
