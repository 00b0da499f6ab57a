"""Secrets never reach the log, a report or a people's copy; hashes and ids do."""

from __future__ import annotations

import itertools
import json
import random
import re
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from santa_method.core.redact import Finding, find_secrets, redact, redact_text

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


# --- secrets quoted alone (no KEY= context), and what must survive them ---------

BARE_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n"
)


@pytest.mark.parametrize(
    "text",
    [
        BARE_AWS_SECRET,
        f"The output hard-codes {BARE_AWS_SECRET} as the secret.",
        f'quote: "{BARE_AWS_SECRET}"',
        PEM_BODY.splitlines()[0],
        f"line 4 reads `{PEM_BODY.splitlines()[1]}`",
        "token Xy7Qp2Lk9Rt4Vb6Nm1Zc8Wd3Fg5Hj0Ks2Lq7Pw4Er9Ty6Ui1Op3As5Df8Gh2Jk4 leaked",
        "base64url 3q2-7wAbCdEfGh_IjKlMnOpQrStUvWxYz0123456789",
    ],
)
def test_a_secret_quoted_without_its_key_is_redacted(text: str) -> None:
    out = redact_text(text)
    assert "[REDACTED:High Entropy Token]" in out
    for token in text.replace("`", " ").replace('"', " ").split():
        if len(token) >= 32:
            assert token not in out


def test_every_line_of_a_pem_body_quoted_alone_is_redacted() -> None:
    out = redact_text(PEM_BODY)
    assert out == "[REDACTED:High Entropy Token]\n[REDACTED:High Entropy Token]\n"


def test_random_base64_secrets_are_caught() -> None:
    """Not luck with one example: keys drawn at random (seeded) of the usual lengths."""
    rng = random.Random(11)
    alphabet = string.ascii_letters + string.digits + "+/"
    missed = [
        key
        for length in (40, 44, 64)
        for key in ("".join(rng.choice(alphabet) for _ in range(length)) for _ in range(200))
        if key in redact_text(f"see {key} here")
    ]
    assert missed == []


@pytest.mark.parametrize(
    "text",
    [
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it",  # a git SHA
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
        "3f2b8c1e-4d5a-4b6c-8e7f-9a0b1c2d3e4f",
        "run 20261201-210319-ab12cd, batch b-20261201-210319-0a1b2c",
        "scripts/santa_method/headless/backends/anthropic_batch.py",
        "test_rubric_hash_is_sha256_of_canonical_json",
        "ThisIsAVeryLongCamelCaseIdentifierName12",
        "x86_64-unknown-linux-gnu-toolchain-for-release-2024",
        "https://github.com/owner/santa-method/blob/main/README.md#limits-of-the-method",
    ],
)
def test_digests_ids_and_identifiers_survive(text: str) -> None:
    assert redact_text(text) == text


def test_paths_through_random_temp_folders_survive() -> None:
    """Claude Code's and tempfile's folders have random names; the path is no key."""
    rng = random.Random(5)
    for _ in range(200):
        name = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(6))
        temp = "".join(rng.choice(string.ascii_lowercase + string.digits + "_") for _ in range(8))
        path = (
            f"/root/.cache/santa-method-tests/eval-{temp}/claude-eval-{name}/home/cwd"
            "/.santa/runs/20261202-022133-8d3c84/round-1/assignment.md"
        )
        assert redact_text(f"Read the whole file {path} to its end") == (
            f"Read the whole file {path} to its end"
        )


@pytest.mark.parametrize(
    "template",
    [
        "/home/me/santa-keys/{key}/old_file.txt",
        "x-y/{key}",
        "{key}-",
        "aws_{key}",
        "{key}_old",
        "id-{key}",
        "x={key}",
        "AWS_CREDS={key}",
    ],
)
def test_a_key_glued_to_words_or_inside_a_path_is_still_caught(template: str) -> None:
    for key in (
        "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY9",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ):
        assert key not in redact_text(template.format(key=key))


def test_santas_own_tokens_survive() -> None:
    from santa_method.core.assignments import boundary_for, new_token
    from santa_method.state.store import new_run_id

    for _ in range(200):
        for token in (new_token(), new_token(32), boundary_for("x"), new_run_id()):
            assert redact_text(f"santa-canary: {token}") == f"santa-canary: {token}"


def test_redact_json_redacts_every_string_and_keeps_the_shape() -> None:
    from santa_method.core.redact import redact_json

    data = {"quote": BARE_AWS_SECRET, "n": 3, "list": [PEM_BODY], "sha": SHA}
    out = redact_json(data)
    assert BARE_AWS_SECRET not in json.dumps(out)
    assert out["n"] == 3 and out["sha"] == SHA and list(out) == list(data)


def test_plain_verdict_text_does_not_load_detect_secrets() -> None:
    """The detectors' import costs more than all of `santa validate`: text
    that cannot hold a plugin's secret must not pay for it."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from santa_method.core.redact import redact_text\n"
        "redact_text('valid review, verdict PASS\\n  warning: quotes were not checked')\n"
        "print('detect_secrets' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_a_url_keeps_its_plain_segments_and_loses_its_random_ones() -> None:
    drive_id = "1aZx9QwErTyUiOpAsDfGhJkLzXcVbNm12"
    shown = redact_text(f"see https://drive.google.com/file/d/{drive_id}/view for it")
    assert drive_id not in shown
    assert shown.startswith("see https://drive.google.com/file/d/") and "/view for it" in shown
    # A query's value is judged whole: a key with `/` in it still goes.
    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    shown = redact_text(f"https://h.example/x?key={key}&page=2")
    assert "K7MDENG" not in shown and shown.endswith("&page=2")
    plain = "https://github.com/anthropics/claude-code/blob/4f3a9c1e2b7d/docs/plugins-reference.md"
    assert redact_text(plain) == plain


@pytest.mark.parametrize(
    "template",
    [
        '{{"endpoint":"https://s3.amazonaws.com/bucket","value":"{key}"}}',
        "https://x.example/a,{key}",
        '["https://x.example","{key}"]',
        "(https://a.example/c) {key}",
        "https://a.example/c:{key}",
        "see <https://a.example/> {key}",
    ],
)
def test_a_key_after_a_url_is_judged_whole(template: str) -> None:
    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert "K7MDENG" not in redact_text(template.format(key=key))


@pytest.mark.parametrize(
    "name",
    [
        "Base64HighEntropyStringDetectorPlugin",
        "Sha256DigestVerificationFailedException",
        "S3ObjectLambdaAccessPointConfiguration",
        "shouldReturn404WhenUserIsNotFoundInTheDatabase",
        "AmazonS3ClientBuilderWithCustomEndpoint",
        "HTTPServerRequestHandlerForTheLocalStub",
        "XMLHttpRequestUploadProgressEvent",
        "K8sPodDisruptionBudgetController",
        "IPv6AddressValidatorForAllTheTests",
        "getElementsByTagNameNSForTheTestSuite",
        "GrpcStreamingClientInterceptorFactory",
    ],
)
def test_camel_case_names_survive(name: str) -> None:
    assert redact_text(f"the class {name} fails") == f"the class {name} fails"


def test_random_letters_and_digits_are_not_taken_for_names() -> None:
    """Keys without + or / (base62, as many API keys are) are still caught."""
    rng = random.Random(12)
    alphabet = string.ascii_letters + string.digits
    missed = [
        key
        for length in (32, 40)
        for key in ("".join(rng.choice(alphabet) for _ in range(length)) for _ in range(500))
        if key in redact_text(f"see {key} here")
    ]
    assert missed == []


def test_a_url_encoded_key_is_judged_decoded() -> None:
    sig = "Zm9vYmFyYmF6cXV4MTIz%2BQWxhZGRpbjpvcGVuIHNl%2FY2FtZTEyMzQ1Njc4OQ%3D%3D"
    shown = redact_text(f"https://a.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig={sig}")
    assert "QWxhZGRpbjpvcGVu" not in shown and shown.endswith("sig=[REDACTED:High Entropy Token]")
    words = "My%20Documents/Some%20File%20Name%20Longer%20Than%20Needed.pdf"
    assert redact_text(words) == words


def test_one_case_keys_are_not_taken_for_names() -> None:
    """Capitals and digits, or small letters and digits, are no CamelCase:
    such keys are judged by their entropy, as before names were kept."""
    from santa_method.core.redact import _is_name

    rng = random.Random(13)
    for alphabet in (
        string.ascii_lowercase + string.digits,
        string.ascii_uppercase + string.digits,
        string.ascii_lowercase,
    ):
        for _ in range(300):
            assert not _is_name("".join(rng.choice(alphabet) for _ in range(32)))


def test_vowelless_words_alone_do_not_make_a_name() -> None:
    """The listed vowel-less words (`Http`, `Xml`, `s`) are allowed in a name,
    not enough for one: a key spelt from them, or random letters around
    them, is still judged by its entropy."""
    for key in ("HttpXmlSqlTcpDnsCssPdfPngJpgSvgRgbMsg", "K8sQz7Wv2XmLpR4tNb9HttpYc3Jd6Fg1Ks"):
        assert key not in redact_text(f"see {key} here")
    rng = random.Random(14)
    alphabet = string.ascii_letters + string.digits
    missed = [
        key
        for key in ("".join(rng.choice(alphabet) for _ in range(36)) for _ in range(1000))
        if key in redact_text(f"see {key} here")
    ]
    assert missed == []


# --- a URL's userinfo (issue 29, item 5) ------------------------------------------

URL_PASSWORD = "Qw7!H6qEzVFSU7"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            f"postgres://admin:{URL_PASSWORD}@db.internal:5432/app",
            "postgres://[REDACTED:Basic Auth Credentials]@db.internal:5432/app",
        ),
        (
            f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db.internal:5432/app",
            "DATABASE_URL=postgres://[REDACTED:Basic Auth Credentials]@db.internal:5432/app",
        ),
        (
            "redis://:p@ss#w/rd:x!$1@cache.internal:6379/0",
            "redis://[REDACTED:Basic Auth Credentials]@cache.internal:6379/0",
        ),
        (
            'url: "amqp://guest:h@ck/er#1@mq.internal" (line 4)',
            'url: "amqp://[REDACTED:Basic Auth Credentials]@mq.internal" (line 4)',
        ),
        (
            "see (https://deploy:S3cr3t$Pa55@git.example.com/org/repo.git).",
            "see (https://[REDACTED:Basic Auth Credentials]@git.example.com/org/repo.git).",
        ),
        (
            "ftp://ann@example.com:pw!1@files.example.com/in",
            "ftp://[REDACTED:Basic Auth Credentials]@files.example.com/in",
        ),
        (
            "proxy https://x.example/?next=http://u:p!@inner.example/a done",
            "proxy https://x.example/?next=http://[REDACTED:Basic Auth Credentials]@inner.example/a"
            " done",
        ),
    ],
)
def test_a_urls_password_goes_whatever_its_characters(text: str, shown: str) -> None:
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "write to ann@example.com",
        "ssh in as user@host",
        "git@github.com:org/repo",
        "clone https://user@host/repo or ssh://git@github.com:22/org/repo.git",
        "https://medium.com/@ann/post-about-it",
        "https://en.wikipedia.org/wiki/User:Ann@Home",
        "https://example.com:8443/path?q=1#top",
        "http://localhost:5173/@vite/client",
        "mailto:ann@example.com",
        "the ratio 3:1 @ 20 C",
    ],
)
def test_addresses_and_urls_without_a_password_are_kept(text: str) -> None:
    assert redact_text(text) == text


_NO_SPACE = st.characters(blacklist_categories=("Cs",)).filter(lambda c: not c.isspace())


@settings(max_examples=300, deadline=None)
@given(
    scheme=st.from_regex(r"[a-z][a-z0-9+.\-]{0,9}", fullmatch=True),
    user=st.from_regex(r"[A-Za-z0-9._~\-]{0,12}", fullmatch=True),
    password=st.text(_NO_SPACE, min_size=1, max_size=40),
    host=st.sampled_from(["db.internal", "db.internal:5432", "10.0.0.7", "[::1]:8080", "h"]),
    path=st.sampled_from(["", "/", "/app", "/org/repo.git?x=1#y"]),
    before=st.sampled_from(["", "DATABASE_URL=", 'url = "', "see (", "`", "x "]),
    after=st.sampled_from(["", '"', ")", "`", ".", " and more", "\nnext line"]),
)
def test_property_a_urls_userinfo_is_always_inside_a_redaction(
    scheme: str, user: str, password: str, host: str, path: str, before: str, after: str
) -> None:
    """`scheme://user:pass@host` loses its userinfo whatever the password's
    characters (`@`, `#`, `/`, `:`, `!`, `$`, quotes, any script), except one
    that is only a port and a `/`, which reads as `host:port/@path`."""
    assume(not re.fullmatch(r"[0-9]{1,5}/", password))
    text = f"{before}{scheme}://{user}:{password}@{host}{path}{after}"
    start = len(before) + len(scheme) + 3
    end = start + len(user) + 1 + len(password)
    assert any(f.start <= start and end <= f.end for f in find_secrets(text)), text
    assert f":{password}@" not in redact_text(text)
