"""Who reviews: one reviewer slot per entry of a models list, each a backend and a model.

Why one module: `--models`, the config's `models` and the Python options'
`models` are the same list, so the rule that reads it lives once. An entry
is `MODEL` (the run's backend, `--backend`) or `BACKEND:MODEL`
(`anthropic:claude-sonnet-4-5,openai:gpt-5.1`); the number of entries is
the number of slots, and a reviewer count that says otherwise is refused.
One entry alone is the exception that keeps `models: sonnet` meaning
"every reviewer": a single slot is never a verification, so it cannot be
meant as a count. A name santa cannot route is refused here, before any
call, naming the backends there are; a model name holding a colon (an
Ollama tag such as `llama3.1:8b`) is written after its backend
(`openai:llama3.1:8b`).

A model's family (`model_family`) is derived here too, once: reviewers of
one family tend to make the same mistakes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from santa_method.core import numbers
from santa_method.core.errors import InputError
from santa_method.core.gate import default_labels

#: The backends an entry may name, in the order error messages list them.
BACKENDS = ("anthropic", "claude", "openai", "anthropic-batch")
#: Backends that only reach Claude models.
CLAUDE_BACKENDS = frozenset({"anthropic", "claude", "anthropic-batch"})
DEFAULT_REVIEWERS = 2


@dataclass(frozen=True)
class Reviewer:
    """One reviewer slot: its label (`B`, `C`, ...), the backend that answers
    it (None: the run's own) and the model (None: that backend's default)."""

    label: str
    backend: str | None
    model: str | None

    @property
    def entry(self) -> str | None:
        """The slot as a models-list entry (`openai:gpt-5.1`, `sonnet`), None for no model."""
        if self.model is None:
            return None if self.backend is None else f"{self.backend}:"
        return self.model if self.backend is None else f"{self.backend}:{self.model}"

    def on(self, default_backend: str) -> Reviewer:
        """The slot with the run's backend filled in where the entry named none."""
        return (
            self if self.backend is not None else Reviewer(self.label, default_backend, self.model)
        )


def parse_entry(text: str, what: str = "models") -> tuple[str | None, str]:
    """(backend or None, model) of one entry, or an InputError naming `what`."""
    entry = text.strip() if isinstance(text, str) else ""
    if not entry:
        raise InputError(f"{what} has an empty entry; give one model per reviewer")
    head, colon, tail = entry.partition(":")
    if not colon:
        return None, entry
    backend = head.strip()
    if backend not in BACKENDS:
        raise InputError(
            f"{what}: santa cannot route '{entry}': the part before its colon is none of the "
            f"backends ({', '.join(BACKENDS)}); write BACKEND:MODEL, and a model name that "
            "holds a colon after its backend (openai:NAME:TAG)"
        )
    model = tail.strip()
    if not model:
        raise InputError(f"{what}: '{entry}' names the {backend} backend but no model")
    return backend, model


def reviewer_slots(
    models: Sequence[str] | str | None,
    reviewers: int | None = None,
    *,
    what: str = "models",
    count_what: str = "reviewers",
) -> tuple[Reviewer, ...]:
    """The reviewer slots of a run from its models list and its reviewer count.

    Two or more entries: one slot each, and `reviewers`, when given, must
    agree. One entry: every slot uses it. None: the backend's default for
    each of `reviewers` slots (2 when not given)."""
    if isinstance(models, str):
        models = [part for part in models.split(",")]
    entries = [parse_entry(m, what) for m in models] if models else []
    if len(entries) >= 2:
        count = len(entries)
        if reviewers is not None and reviewers != count:
            raise InputError(
                f"{what} names {count} reviewers (one per entry) but {count_what} asks for "
                f"{reviewers}; give one model per reviewer, or leave the count out"
            )
    else:
        count = reviewers if reviewers is not None else DEFAULT_REVIEWERS
    count = int(
        numbers.REVIEWERS.check(count, count_what if len(entries) < 2 else f"the count of {what}")
    )
    labels = default_labels(count)
    if not entries:
        return tuple(Reviewer(label, None, None) for label in labels)
    if len(entries) == 1:
        entries = entries * count
    return tuple(Reviewer(label, b, m) for label, (b, m) in zip(labels, entries, strict=True))


# Families by model name: the first pattern that matches names it.
_FAMILIES = (
    ("claude", r"claude|\b(opus|sonnet|haiku)\b"),
    ("gpt", r"\bgpt|chatgpt|\bo[1-9](\b|-)|codex"),
    ("gemini", r"gemini|gemma"),
    ("llama", r"llama"),
    ("mistral", r"mistral|mixtral|codestral|magistral|devstral"),
    ("qwen", r"qwen|qwq"),
    ("deepseek", r"deepseek"),
    ("grok", r"grok"),
    ("phi", r"\bphi"),
)
# Families by endpoint, when the model's name does not say.
_HOSTS = (
    ("gpt", "api.openai.com"),
    ("gemini", "generativelanguage.googleapis.com"),
    ("grok", "api.x.ai"),
    ("mistral", "api.mistral.ai"),
    ("deepseek", "api.deepseek.com"),
)


def model_family(backend: str | None, model: str | None, endpoint: str | None = None) -> str:
    """The family of the model behind a reviewer: `claude` for the Claude
    backends, else one read from the model's name (`gpt`, `gemini`,
    `llama`, ...; a router's `google/gemini-2.5-pro` counts as gemini), else
    from the endpoint's host, else `unknown`."""
    if backend in CLAUDE_BACKENDS:
        return "claude"
    name = (model or "").lower()
    for family, pattern in _FAMILIES:
        if re.search(pattern, name):
            return family
    host = (urlsplit(endpoint).hostname or "") if endpoint else ""
    for family, known in _HOSTS:
        if host == known or host.endswith("." + known):
            return family
    return "unknown"


@dataclass(frozen=True)
class Juror:
    """A reviewer as a person is told of it: its slot, the backend that
    answered (None when unknown), the model (None: the backend's default)
    and that model's family."""

    label: str
    backend: str | None
    model: str | None
    family: str

    def describe(self) -> str:
        """`B: claude-sonnet-4-5 (claude, on anthropic)`."""
        where = f", on {self.backend}" if self.backend else ""
        return f"{self.label}: {self.model or 'default model'} ({self.family}{where})"


def juror(label: str, backend: str | None, model: str | None) -> Juror:
    """The reviewer of a slot with its family derived (`model_family`)."""
    return Juror(label, backend, model, model_family(backend, model))


#: A reviewer of each of two families, to name in the warning's line.
_OF_FAMILY = {"gpt": "openai:gpt-5.1", "claude": "anthropic:claude-sonnet-4-5"}


def one_mind(jurors: Sequence[Juror], author_model: str | None) -> str | None:
    """The warning for a jury that is one mind with the output's author:
    every reviewer of the family of the model that wrote the output (a
    nudge with its reason and the line that adds another family, never an
    error). None when the author is not named, its family is unknown, or
    one reviewer is of another family."""
    author = model_family(None, author_model)
    if not jurors or author == "unknown" or any(j.family != author for j in jurors):
        return None
    other = next(entry for family, entry in _OF_FAMILY.items() if family != author)
    first = jurors[0]
    if first.model is None:
        kept = _OF_FAMILY.get(author, other)
    else:
        kept = first.model if first.backend is None else f"{first.backend}:{first.model}"
    return (
        f"every reviewer is a {author} model, as is {author_model}, which wrote the output: "
        "reviewers of the author's family tend to miss what it missed; add a reviewer of "
        f"another family, e.g. --models {kept},{other}"
    )
