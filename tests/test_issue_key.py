"""An issue's key is readable, holds no secret, and redaction leaves it as it is
(issue 33, item 6), so every copy of it (state, log, reports) is the same.

The entropy rule judges the tokens of a text as written: a sentence is many
short words, but its key's matching form runs them together, which looks
random. A key is therefore judged on its flag's own words, and kept readable
only in a form redaction leaves alone.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from santa_method.core.merge import issue_key, readable_key, seal_key
from santa_method.core.redact import redact_text
from santa_method.core.text import normalise
from santa_method.core.types import Issue

SENTENCES = [
    "You can ask for a full refund within 60 days of delivery.",
    "The quarterly revenue grew by 12 percent compared with the previous quarter.",
    "Our support team answers every ticket within two business days of receipt.",
    "Install the package with pip and run the command once to create the config.",
]
SECRETS = [
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AKIAZ3MSJV4WTKQX7ABC",
    "sk-ant-api03-Xy7Qp2Lk9Rt4Vb6Nm1Zc8Wd3Fg5Hj0Ks2Lq7Pw4Er9Ty6Ui1Op3As5Df8Gh2Jk4",
    "postgres://admin:Qw7!H6qEzVFSU7@db.internal:5432/app",
    'password = "correct-horse-battery"',
]


@pytest.mark.parametrize("sentence", SENTENCES)
def test_prose_is_not_redacted_nor_is_its_key(sentence: str) -> None:
    assert redact_text(sentence) == sentence  # its words, judged one by one
    key = issue_key(Issue("factual-accuracy", "wrong", sentence))
    assert "REDACTED" not in key and "redacted:" not in key
    assert redact_text(key) == key
    assert key.split("|quote:", 1)[1].replace(" ", "") == normalise(sentence)


def test_a_quote_whose_matching_form_is_safe_keeps_it() -> None:
    """Keys (and CI fingerprints) of ordinary quotes are as before."""
    flag = Issue("completeness", "x", "The total is computed twice")
    assert issue_key(flag) == readable_key(flag) == "completeness|quote:thetotaliscomputedtwice"


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_is_still_redacted_and_its_key_is_sealed(secret: str) -> None:
    quote = f"The config sets {secret} in plain text."
    assert "[REDACTED:" in redact_text(quote)
    key = issue_key(Issue("compliance", "a credential is published", quote))
    shown = Issue("compliance", "a credential is published", redact_text(quote))
    assert key == seal_key("compliance", readable_key(shown))  # from the redacted words
    assert key.startswith("compliance|redacted:") and redact_text(key) == key
    # The same flag next round has the same key.
    assert key == issue_key(Issue("compliance", "other words", quote))


@settings(max_examples=300, deadline=None)
@given(
    criterion=st.sampled_from(["factual-accuracy", "technical-correctness"]) | st.text(max_size=30),
    quote=st.lists(
        st.sampled_from(SENTENCES + SECRETS) | st.text(max_size=40), min_size=1, max_size=4
    ).map(" ".join),
    kind=st.sampled_from(["quote", "missing", "issue"]),
)
def test_property_redaction_never_changes_a_key(criterion: str, quote: str, kind: str) -> None:
    flag = Issue(
        criterion,
        quote if kind == "issue" else "wrong",
        quote if kind == "quote" else None,
        quote if kind == "missing" else None,
    )
    key = issue_key(flag)
    assert redact_text(key) == key
    for secret in SECRETS:
        if secret in quote or secret in criterion:
            assert secret.casefold() not in key.casefold()
