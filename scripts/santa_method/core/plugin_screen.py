"""Which detect-secrets plugins could flag a text, known without importing them.

Importing detect-secrets costs more than the rest of `santa validate`, and
most text santa prints (a verdict, criterion ids, a reviewer's sentence)
holds nothing any of its plugins finds. `TRIGGERS` holds, for each plugin
`core.redact` runs, patterns that every text the plugin flags contains, all
of them: the fixed prefix its own patterns start with, or the keyword and
the run of characters they require. They are weaker than the plugins' own
patterns, never stronger: `tests/test_plugin_screen.py` generates texts
from every pattern of every plugin, and random texts, and checks that
whatever a plugin flags, its triggers find; a plugin a detect-secrets
upgrade adds has no triggers, and fails that test.

A trigger written `(?i)...` (for a plugin that ignores case) is searched,
in lower case, in the text folded (`fold`): lower-cased, with the four
letters outside ASCII that Python's regular expressions take for ASCII ones
when case is ignored (dotted capital I, dotless i, long s, the Kelvin sign)
spelt as those. That finds what ignoring case finds, at the speed of a
case-sensitive search.
"""

from __future__ import annotations

import re
from functools import cache

# fmt: off
#: Plugin class name -> patterns that must all be found in a text it flags.
TRIGGERS: dict[str, tuple[str, ...]] = {
    "AWSKeyDetector": (r"(?i)a3t|abia|acca|akia|asia|aws",),
    "ArtifactoryDetector": (r"AKC|AP[\dABCDEF]",),
    "AzureStorageKeyDetector": (r"AccountKey=",),
    "BasicAuthDetector": (r"://",),
    "CloudantDetector": (
        r"(?i)cl(?:oudant|ou)?[_-]?(?:api)?(?:key|pw|pass|token)|\.cloudant\.com",
        r"(?i)[0-9a-z]{24}",
    ),
    "DiscordBotTokenDetector": (r"[MNO][a-zA-Z\d_-]{23}",),
    "GitHubTokenDetector": (r"gh[pousr]_",),
    "GitLabTokenDetector": (r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-|GR1348941",),
    "IbmCloudIamDetector": (r"(?i)key|pwd|pass|token", r"(?i)[a-z0-9_\-]{44}"),
    "IbmCosHmacDetector": (r"(?i)secret", r"(?i)[a-f0-9]{48}"),
    "JwtTokenDetector": (r"eyJ",),
    # Every keyword of its list holds one of these; its values stand in quotes.
    "KeywordDetector": (r"(?i)key|passw|b_?pass|e_?pass|pwd|secret|contrase", r"['\"`]"),
    "MailchimpDetector": (r"-us[0-9]",),
    "NpmDetector": (r"_authToken=",),
    "OpenAIDetector": (r"T3BlbkFJ",),
    "PrivateKeyDetector": (r"BEGIN|PuTTY-User-Key-File-2",),
    "PypiTokenDetector": (r"pypi-AgE",),
    "SendGridDetector": (r"SG\.",),
    "SlackDetector": (r"(?i)xox[abposr]-|hooks\.slack\.com",),
    "SoftlayerDetector": (
        r"(?i)sl[_-]?(?:api)?[_-]?(?:key|pwd|pass|token)|softlayer",
        r"(?i)[a-z0-9]{64}",
    ),
    "SquareOAuthDetector": (r"sq0csp-",),
    "StripeDetector": (r"[rs]k_live_",),
    "TelegramBotTokenDetector": (r":", r"\d{8}:"),
    "TwilioKeyDetector": (r"(?:AC|SK)[a-z0-9]{32}",),
}
# fmt: on

_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def fold(text: str) -> str:
    """`text` as a case-ignoring search sees it, in lower case and as long."""
    return text.translate(_FOLD).lower()


def could_flag(text: str, folded: str | None = None) -> frozenset[str]:
    """The plugins (by class name) whose triggers are all found in `text`
    (`folded` is `fold(text)`, if the caller has it): the only ones that
    could flag anything in it."""
    if folded is None:
        folded = fold(text)
    found = []
    for name, patterns in _compiled():
        for ignore_case, pattern in patterns:
            if not pattern.search(folded if ignore_case else text):
                break
        else:
            found.append(name)
    return frozenset(found)


@cache
def _compiled() -> tuple[tuple[str, tuple[tuple[bool, re.Pattern[str]], ...]], ...]:
    # Compiled on first use, as `core.redact` compiles its own patterns: a
    # cold start that redacts nothing pays for none of them.
    return tuple(
        (
            name,
            tuple(
                (True, re.compile(p.removeprefix("(?i)")))
                if p.startswith("(?i)")
                else (False, re.compile(p))
                for p in patterns
            ),
        )
        for name, patterns in TRIGGERS.items()
    )
