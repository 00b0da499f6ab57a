"""The one rule that reads a models list (core/reviewers.py): entries, slots, families."""

from __future__ import annotations

import pytest

from santa_method.core.errors import InputError
from santa_method.core.reviewers import (
    Reviewer,
    juror,
    model_family,
    one_mind,
    parse_entry,
    reviewer_slots,
)


@pytest.mark.parametrize(
    ("entry", "parsed"),
    [
        ("sonnet", (None, "sonnet")),
        ("  claude-sonnet-4-5 ", (None, "claude-sonnet-4-5")),
        ("anthropic:claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("openai:gpt-5.1", ("openai", "gpt-5.1")),
        ("openai:llama3.1:8b", ("openai", "llama3.1:8b")),  # the tag's colon stays the model's
        ("openai:google/gemini-2.5-pro", ("openai", "google/gemini-2.5-pro")),
        ("claude:opus", ("claude", "opus")),
    ],
)
def test_an_entry_is_a_model_or_a_backend_and_a_model(entry: str, parsed: tuple) -> None:
    assert parse_entry(entry) == parsed


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("gemini:gemini-2.5-pro", "cannot route 'gemini:gemini-2.5-pro'"),
        ("llama3.1:8b", "cannot route 'llama3.1:8b'"),
        ("OpenAI:gpt-5.1", "cannot route 'OpenAI:gpt-5.1'"),
        ("openai:", "names the openai backend but no model"),
        ("  ", "empty entry"),
    ],
)
def test_an_entry_santa_cannot_route_is_refused_naming_the_backends(
    entry: str, message: str
) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_entry(entry, "--models")
    assert str(info.value).startswith("--models")
    if "route" in message:
        assert "(anthropic, claude, openai, anthropic-batch)" in str(info.value)


def test_the_entries_are_the_slots() -> None:
    slots = reviewer_slots(["anthropic:claude-sonnet-4-5", "openai:gpt-5.1", "haiku"])
    assert slots == (
        Reviewer("B", "anthropic", "claude-sonnet-4-5"),
        Reviewer("C", "openai", "gpt-5.1"),
        Reviewer("D", None, "haiku"),
    )
    assert [s.entry for s in slots] == ["anthropic:claude-sonnet-4-5", "openai:gpt-5.1", "haiku"]
    assert slots[2].on("openai") == Reviewer("D", "openai", "haiku")
    assert reviewer_slots("sonnet,opus", 2) == reviewer_slots(["sonnet", "opus"])


def test_one_entry_is_every_reviewers_and_none_is_the_backends_default() -> None:
    assert reviewer_slots(["sonnet"], 3) == tuple(Reviewer(x, None, "sonnet") for x in "BCD")
    assert reviewer_slots(["sonnet"]) == tuple(Reviewer(x, None, "sonnet") for x in "BC")
    assert reviewer_slots(None) == (Reviewer("B", None, None), Reviewer("C", None, None))
    assert len(reviewer_slots(None, 4)) == 4


def test_a_count_that_disagrees_with_the_entries_is_refused() -> None:
    with pytest.raises(
        InputError,
        match=r"^--models names 2 reviewers \(one per entry\) but --reviewers asks for 3",
    ):
        reviewer_slots(["sonnet", "opus"], 3, what="--models", count_what="--reviewers")
    with pytest.raises(InputError, match="at least 2 reviewers"):
        reviewer_slots(None, 1)
    with pytest.raises(InputError, match="the count of models must be a whole number from 2 to 50"):
        reviewer_slots(["sonnet"] * 51)


@pytest.mark.parametrize(
    ("backend", "model", "endpoint", "family"),
    [
        ("anthropic", "claude-sonnet-4-5", None, "claude"),
        ("claude", None, None, "claude"),
        ("anthropic-batch", "haiku", None, "claude"),
        ("openai", "gpt-5.1", None, "gpt"),
        ("openai", "o4-mini", None, "gpt"),
        ("openai", "openai/gpt-5-mini", "https://openrouter.ai/api/v1", "gpt"),
        ("openai", "gemini-2.5-pro", None, "gemini"),
        ("openai", "google/gemini-2.5-flash", "https://openrouter.ai/api/v1", "gemini"),
        ("openai", "llama3.1:8b", "http://localhost:11434/v1", "llama"),
        ("openai", "meta-llama/Llama-3.3-70B-Instruct", None, "llama"),
        ("openai", "anthropic/claude-sonnet-4.5", "https://openrouter.ai/api/v1", "claude"),
        ("openai", "qwen2.5-coder:14b", None, "qwen"),
        (
            "openai",
            "my-finetune",
            "https://generativelanguage.googleapis.com/v1beta/openai/",
            "gemini",
        ),
        ("openai", "my-finetune", "https://api.openai.com/v1", "gpt"),
        ("openai", "my-finetune", "http://localhost:8080/v1", "unknown"),
        ("openai", None, None, "unknown"),
        ("mine", "house-model", None, "unknown"),
    ],
)
def test_a_models_family_comes_from_its_backend_name_or_endpoint(
    backend: str, model: str | None, endpoint: str | None, family: str
) -> None:
    assert model_family(backend, model, endpoint) == family


def test_a_jury_of_the_authors_family_is_one_mind_and_told_how_to_add_another() -> None:
    jury = [juror("B", "anthropic", "claude-sonnet-4-5"), juror("C", "claude", "haiku")]
    assert [j.describe() for j in jury] == [
        "B: claude-sonnet-4-5 (claude, on anthropic)",
        "C: haiku (claude, on claude)",
    ]
    warning = one_mind(jury, "claude-opus-4-5")
    assert warning is not None
    assert "every reviewer is a claude model, as is claude-opus-4-5" in warning
    assert warning.endswith("--models anthropic:claude-sonnet-4-5,openai:gpt-5.1")
    # The line it gives is one santa routes, and it mixes two families.
    line = warning.rsplit("--models ", 1)[1]
    slots = reviewer_slots(line)
    assert {model_family(s.backend, s.model) for s in slots} == {"claude", "gpt"}
    # A GPT jury for a GPT author is told to add a Claude reviewer.
    gpt = [juror("B", "openai", "gpt-5.1"), juror("C", "openai", "gpt-5-mini")]
    assert str(one_mind(gpt, "gpt-5.1")).endswith("--models openai:gpt-5.1,anthropic:claude-sonnet-4-5")
    # A default model on a Claude backend is still Claude's family.
    assert one_mind([juror("B", "anthropic", None), juror("C", "anthropic", None)], "opus")


@pytest.mark.parametrize(
    ("jury", "author"),
    [
        ([("B", "anthropic", "sonnet"), ("C", "openai", "gpt-5.1")], "claude-opus-4-5"),
        ([("B", "anthropic", "sonnet"), ("C", "anthropic", "haiku")], "gpt-5.1"),
        ([("B", "anthropic", "sonnet"), ("C", "anthropic", "haiku")], None),
        ([("B", "anthropic", "sonnet"), ("C", "anthropic", "haiku")], "my-own-model"),
        ([], "claude-opus-4-5"),
    ],
)
def test_no_warning_without_an_author_of_the_jurys_one_family(jury: list, author: str | None) -> None:
    assert one_mind([juror(*j) for j in jury], author) is None
