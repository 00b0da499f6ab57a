"""Secrets never reach the log, a report or a people's copy; hashes and ids do."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from santa_method.state.redact import Finding, find_secrets, redact, redact_text

# Planted, syntactically valid, fake credentials.
ANTHROPIC = (
    "sk-ant-api03-" + "Xy7Qp2Lk9Rt4Vb6Nm1Zc8Wd3Fg5Hj0Ks2Lq7Pw4Er9Ty6Ui1Op3As5Df8Gh2Jk4" + "-AbC_dEf"
)
AWS = "AKIAZ3MSJV4WTKQX7ABC"
GITHUB = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
UUID = "3f2b8c1e-4d5a-4b6c-8e7f-9a0b1c2d3e4f"


def test_anthropic_key_in_a_quote_is_redacted_with_its_type() -> None:
    quote = f'client = Anthropic(api_key="{ANTHROPIC}")'
    out = redact_text(quote)
    assert ANTHROPIC not in out
    assert "sk-ant" not in out
    assert out == 'client = Anthropic(api_key="[REDACTED:Anthropic API Key]")'


def test_aws_and_github_keys_inside_a_review_issue_are_redacted() -> None:
    issue = {
        "criterion": "compliance",
        "issue": "credentials are committed",
        "quote": f'AWS_ACCESS_KEY_ID={AWS}\ntoken: "{GITHUB}"',
        "location": "line 3",
        "evidence": "verified",
    }
    out = redact({"issues": [issue], "tokens": 1234, "valid": True})
    quote = out["issues"][0]["quote"]
    assert AWS not in quote and GITHUB not in quote
    assert "[REDACTED:AWS Access Key]" in quote
    assert "[REDACTED:GitHub Token]" in quote
    # The token's body is gone too, not just the `ghp` prefix the plugin captures.
    assert "aBcDeFgHiJ" not in quote
    # Everything else is untouched, non-strings included.
    assert out["issues"][0]["issue"] == issue["issue"]
    assert out["tokens"] == 1234 and out["valid"] is True


@pytest.mark.parametrize(
    ("text", "kind", "gone"),
    [
        (
            "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0zzqq",
            "Bearer Token",
            "9f8e7d6c5b",
        ),
        (
            "url = https://admin:s3cr3tP4ssw0rd@db.example.com/app",
            "Basic Auth Credentials",
            "s3cr3tP4ssw0rd",
        ),
        ('password = "correct-horse-battery"', "Secret Keyword", "correct-horse-battery"),
        ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "Slack Token", "xoxb-1"),
        ("stripe sk_live_abcdefghijklmnopqrstuvwx here", "Stripe Access Key", "sk_live_a"),
        (
            "fine-grained github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL",
            "GitHub Token",
            "github_pat_",
        ),
    ],
)
def test_other_credential_formats(text: str, kind: str, gone: str) -> None:
    out = redact_text(text)
    assert gone not in out
    assert f"[REDACTED:{kind}]" in out


def test_a_private_key_block_is_redacted_whole() -> None:
    text = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1y2z3\nQ2hlY2s0==\n"
        "-----END RSA PRIVATE KEY-----\nafter"
    )
    out = redact_text(text)
    assert out == "before\n[REDACTED:Private Key]\nafter"


@pytest.mark.parametrize(
    "text",
    [
        SHA,
        f'"target_sha256": "{SHA}"',
        f"sha256 {SHA}",
        UUID,
        f"run {UUID} round 2",
        "santa-canary: 8f3kQz9LmP2xR7vTa1",
        "The function returns the wrong total; the password is never checked.",
        "The README must have a License section (MIT), see line 12.",
        "def check(x):\n    return x * 2  # TODO",
        "server at 8.8.8.8 port 53",
        "Send it as a Bearer authentication-scheme header.",
        "completeness|quote:the total is computed twice",
        "法律条文必须逐字引用。",
        "",
    ],
)
def test_ordinary_text_hashes_and_ids_are_not_redacted(text: str) -> None:
    assert redact_text(text) == text
    assert find_secrets(text) == []


def test_a_log_record_of_hashes_and_ids_passes_unchanged() -> None:
    record = {
        "run_id": UUID,
        "event": "run",
        "target": "docs/README.md",
        "target_sha256": SHA,
        "spec_sha256": SHA[::-1],
        "rubric": "code+regulated",
        "rubric_hash": SHA[:16],
        "models": {"B": "claude-opus-4-1", "C": "claude-sonnet-4-5"},
        "reviewers": 2,
    }
    assert redact(record) == record


def test_skip_keys_are_copied_verbatim_at_any_depth() -> None:
    data = {"a": {"keep": ANTHROPIC, "drop": ANTHROPIC}}
    out = redact(data, skip_keys=frozenset({"keep"}))
    assert out["a"]["keep"] == ANTHROPIC
    assert ANTHROPIC not in out["a"]["drop"]


def test_deterministic_and_idempotent() -> None:
    text = f"keys: {ANTHROPIC} and {AWS}; digest {SHA}"
    once = redact_text(text)
    assert once == redact_text(text)
    assert redact_text(once) == once
    assert once.endswith(SHA)


@pytest.mark.parametrize(
    "value",
    [
        None,
        0,
        1.5,
        True,
        b"bytes " + AWS.encode(),
        "\ud800 lone surrogate",
        "x" * 50_000,
        "\n\n\r\n",
        "\x00" * 10,
    ],
)
def test_odd_input_never_throws(value: object) -> None:
    out = redact(value)
    if not isinstance(value, str):
        assert out == value  # only strings are redacted


def test_a_secret_in_a_very_long_line_is_found_across_windows() -> None:
    line = "x " * 3000 + AWS + " y" * 3000
    out = redact_text(line)
    assert AWS not in out and "[REDACTED:AWS Access Key]" in out


def test_findings_are_sorted_and_disjoint() -> None:
    text = f"{AWS} {ANTHROPIC}\n{GITHUB}"
    found = find_secrets(text)
    assert found == sorted(found, key=lambda f: f.start)
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))
    assert all(isinstance(f, Finding) for f in found)
    assert [text[f.start : f.end] for f in found] == [AWS, ANTHROPIC, GITHUB]


@settings(max_examples=60, deadline=None)
@given(
    prefix=st.text(max_size=80),
    suffix=st.text(max_size=80),
    secret=st.sampled_from([ANTHROPIC, AWS, GITHUB]),
)
def test_property_a_planted_key_never_survives(prefix: str, suffix: str, secret: str) -> None:
    out = redact_text(f"{prefix} {secret} {suffix}")
    assert secret not in out
    assert "[REDACTED:" in out


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_property_structure_is_kept(value: object) -> None:
    out = redact(value)
    assert type(out) is type(value)
    if isinstance(value, dict):
        assert list(out) == list(value)
    json.dumps(out)  # still serialisable


def test_the_speed_gates_are_implied_by_the_plugins_own_keywords() -> None:
    """A plugin skipped by its gate must be unable to match: every keyword the
    plugin knows contains one of the gate's words, in each spelling its regex allows."""
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.keyword import DENYLIST

    from santa_method.state.redact import GATES

    for entry in DENYLIST:
        for spelling in (entry.replace("_?", ""), entry.replace("_?", "_")):
            assert any(w in spelling.lower() for w in GATES["KeywordDetector"]), entry
    pattern = IbmCloudIamDetector.denylist[0].pattern
    assert "(?:key|pwd|password|pass|token)" in pattern
    for alternative in ("key", "pwd", "password", "pass", "token"):
        assert any(w in alternative for w in GATES["IbmCloudIamDetector"]), alternative
    ibm = 'ibm_cloud_iam_api_key = "abcdefghijklmnopqrstuvwxyz0123456789ABCD_-"'
    assert "abcdefghij" not in redact_text(ibm)
