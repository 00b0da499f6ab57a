"""`santa view`: the page's data and HTML, from real runs and a real batch.

The runs are driven through the headless loop with a scripted model
(`_view_project.py`): each planted phrase is one kind of problem, so every
expectation here comes from the phrase, not from the code under test. The
page in a real browser is tested in `test_view_browser.py`.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _view_project as vp
from _view_project import isolate
from santa_method.cli import main
from santa_method.headless.api import VerifyOptions
from santa_method.state import log as runlog
from santa_method.state.history import summarise_runs
from santa_method.view import write_view
from santa_method.view.marks import Located, line_diff, merge_spans
from santa_method.view.model import GONE, TEXTS_LEFT_OUT, fix_report, page_data, problem
from santa_method.view.page import embed_json
from santa_method.view.sources import collect

VERDICT = {"shipped": "NICE", "nice": "NICE", "escalated": "ESCALATED", "open": "open"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from vp.built_project(tmp_path_factory)


@pytest.fixture
def viewed(built: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    isolate(monkeypatch, built["root"])
    return built


def data_of(root: Path, **kwargs: Any) -> dict[str, Any]:
    src = collect(root / ".santa" / "log.jsonl", root / ".santa", **kwargs)
    return page_data(src, generated="2026-01-01T00:00:00Z", since=None)


def run_of(data: dict[str, Any], run_id: str) -> dict[str, Any]:
    return next(r for r in data["runs"] if r["id"] == run_id)


# -- the whole command ------------------------------------------------------------------


def test_an_empty_project_gets_a_friendly_page(tmp_path, monkeypatch, capsys):
    isolate(monkeypatch, tmp_path)
    assert main(["view"]) == 0
    page = tmp_path / ".santa" / "view" / "index.html"
    html = page.read_text(encoding="utf-8")
    assert "No runs have been logged yet" in html and "santa run --against" in html
    assert (page.parent / ".gitignore").read_text() == "*\n"
    assert sorted(p.name for p in page.parent.iterdir()) == [".gitignore", "index.html"]
    assert page.resolve().as_uri() in capsys.readouterr().out


def test_every_run_and_the_batch_are_in_the_page(viewed):
    root = viewed["root"]
    data = data_of(root)
    rows, _ = summarise_runs(root / ".santa" / "log.jsonl")
    assert sorted(r["id"] for r in data["runs"]) == sorted(r["run_id"] for r in rows)
    for row in rows:
        assert run_of(data, row["run_id"])["verdict"] == VERDICT[row["outcome"]]
    assert [b["id"] for b in data["batches"]] == [viewed["batch"].batch_id]
    batch_runs = {o.run_id for o in viewed["batch"].outcomes}
    assert {r["id"] for r in data["runs"] if r.get("batch")} == batch_runs


def test_a_run_page_shows_both_reviewers_and_who_raised_what(viewed):
    data = data_of(viewed["root"])
    run = run_of(data, viewed["runs"]["year"].run_id)
    first, second = run["detail"]["rounds"]
    assert [v["label"] for v in first["reviews"]] == ["B", "C"]
    names = [data["criteria"][i] for i in run["detail"]["criteria"]]
    fa = names.index("factual-accuracy")
    nh = names.index("no-hallucination")
    b, c = first["reviews"]
    assert (b["checks"][fa], c["checks"][fa]) == ("F", "F")
    assert (b["checks"][nh], c["checks"][nh]) == ("F", "P")  # only B saw the invented flag
    assert "reviewer B" in b["details"][fa]  # the reviewer's own words, from the run folder
    by = {p["issue"]: p["by"] for p in first["problems"]}
    assert by == {"the release year is wrong": ["B", "C"], "the tool has no --turbo flag": ["B"]}
    # Each quote is marked where it stands in the output of that round.
    marked = {first["output"][s:e] for s, e, _ in first["marks"]}
    assert marked == {"Released in 1999.", "the --turbo flag"}
    assert first["fix"]["notes"].startswith("1. fixed:")
    assert ["-", vp.README_YEAR.splitlines()[2]] in second["diff"]
    assert any(op == "+" and "Released in 2024." in line for op, line in second["diff"])
    assert second["verdict"] == "NICE" and "problems" not in second


def test_a_run_page_has_each_reply_whole_with_its_model_tokens_cost_and_time(viewed):
    from santa_method.state.store import load_state

    run_id = viewed["runs"]["year"].run_id
    data = data_of(viewed["root"])
    first = run_of(data, run_id)["detail"]["rounds"][0]
    slots = load_state(run_id).rounds[0].slots
    b, c = first["reviews"]
    assert b["reply"] == slots["B"].reply and c["reply"] == slots["C"].reply  # whole, as it came
    # A model is named once for the page, and each reviewer's once for the run.
    models, by = data["models"], run_of(data, run_id)["detail"]["models_by"]
    assert (models[by["B"]], models[by["C"]]) == ("claude-sonnet-4-5", "claude-haiku-4-5")
    assert "model" not in b and "model" not in c  # theirs is the run's
    assert (b["tokens"], b["cost"]) == (2300, 0.0042)
    assert all(isinstance(v["s"], float) and v["s"] >= 0 for v in (b, c))  # seconds
    fix = first["fix"]
    assert (models[fix["model"]], fix["tokens"], fix["cost"]) == ("claude-sonnet-4-5", 1300, 0.003)
    assert isinstance(fix["s"], float)


def test_a_table_row_says_how_many_problems_and_why_the_run_ended(viewed):
    data = data_of(viewed["root"])
    row = {name: run_of(data, r.run_id) for name, r in viewed["runs"].items()}
    # A shipped run's reason is the page's to say (test_view_browser): most runs ship.
    assert row["year"]["problems"] == [2, 0] and "ended" not in row["year"]
    assert row["clean"]["problems"] == [0, 0]
    assert row["price"]["problems"] == [1, 1]
    assert row["price"]["ended"].startswith("needs-input (the fixer asked a question")
    assert row["stuck"]["ended"].startswith("fixes exhausted")


def test_a_check_only_run_s_row_says_it_reported_its_problems(tmp_path, monkeypatch):
    from santa_method.headless import verify_sync

    isolate(monkeypatch, tmp_path)
    target = tmp_path / "a.md"
    target.write_text(vp.README_YEAR)
    result = verify_sync(
        vp.SPEC, target, options=VerifyOptions(backend=vp.ScriptedModel(), max_fixes=0)
    )
    row = run_of(data_of(tmp_path), result.run_id)
    assert row["verdict"] == "NAUGHTY" and row["problems"] == [2, 2]
    assert row["ended"] == "a check (no fixes): problems reported in round 1"


def test_a_secret_in_a_reviewer_s_reply_is_redacted_on_the_page(tmp_path, monkeypatch):
    from santa_method.headless import verify_sync

    isolate(monkeypatch, tmp_path)
    key = "sk-ant-api03-" + "W" * 40

    class Telling(vp.ScriptedModel):
        async def review(self, request: Any) -> Any:
            import dataclasses

            reply = await super().review(request)
            return dataclasses.replace(reply, text=reply.text + f"\n(I tried the key {key}.)")

    target = tmp_path / "a.md"
    target.write_text(vp.README_OK)
    result = verify_sync(vp.SPEC, target, options=VerifyOptions(backend=Telling()))
    (review,) = run_of(data_of(tmp_path), result.run_id)["detail"]["rounds"][0]["reviews"][:1]
    assert key not in review["reply"] and "[REDACTED:Anthropic API Key]" in review["reply"]
    html = write_view(log_path=tmp_path / ".santa" / "log.jsonl", home=tmp_path / ".santa")
    assert key not in html.path.read_text(encoding="utf-8")


def test_an_escalated_run_shows_why_and_the_fixers_question(viewed):
    data = data_of(viewed["root"])
    run = run_of(data, viewed["runs"]["price"].run_id)
    assert run["verdict"] == "ESCALATED"
    escalation = run["detail"]["escalation"]
    assert escalation["reasons"] and escalation["from"] == "report"
    question = "what is the price of the Pro plan?"
    assert run["detail"]["rounds"][0]["fix"]["questions"] == [question]


def test_the_batch_page_has_samples_screens_and_intervals(viewed):
    data = data_of(viewed["root"])
    (batch,) = data["batches"]
    report = json.loads(Path(viewed["batch"].report).with_suffix(".json").read_text())
    d = batch["detail"]
    assert batch["verdict"] == report["verdict"] == "ACCEPTED"
    assert d["failures"] == report["failures_by_criterion"]
    assert d["estimate"]["interval"] == report["estimate"]["interval"]
    assert d["guarantee"] == report["guarantee"]
    first = d["samples"][0]
    assert first["screens"][0]["criterion"] == "completeness"
    assert (
        first["screens"][0]["flagged"] == report["waves"][0]["screens"]["completeness"]["flagged"]
    )
    failed = sorted(i["item"] for i in first["items"] if i["failed"])
    assert failed == sorted(report["waves"][0]["failures_by_criterion"]["completeness"])
    assert len(first["items"]) == report["waves"][0]["n"]


def test_hostile_text_stays_data_and_the_policy_allows_only_the_page(viewed, tmp_path):
    out = tmp_path / "page.html"
    assert main(["view", "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    # Exactly two script elements (the data, the page's own) and no image: the
    # hostile markup is in the data, with its "<" written as an escape.
    assert len(re.findall(r"<script\b", html)) == 2
    assert "<img" not in html
    data = json.loads(_data_text(html))
    hostile = run_of(data, viewed["runs"]["hostile"].run_id)
    assert vp.HOSTILE in hostile["detail"]["rounds"][0]["output"]
    policy = html_lib.unescape(
        re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    )
    assert "default-src 'none'" in policy
    script = re.search(r"<script>(.*)</script></body>", html, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    for inline in (script, style):
        digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    assert "unsafe-inline" not in policy and "http" not in policy


def _data_text(html: str) -> str:
    return re.search(
        r'<script type="application/json" id="santa-data">(.*?)</script>', html, re.S
    ).group(1)


def test_embedded_json_cannot_close_its_element():
    text = embed_json({"s": "</script><script>alert(1)</script><!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"s": "</script><script>alert(1)</script><!-- & -->"}


def test_the_page_s_json_is_json_s_text_with_or_without_orjson():
    from santa_method.state import fastjson

    pytest.importorskip("orjson")
    plain = {"s": "法律 ✓ </script>", "n": [0, -1, 2.5, 0.1, 1e300, True, None], "d": {"k": {}}}
    for data in (plain, {"lone": "\ud800"}, {"big": 2**70}, {1: "an int key"}):
        expected = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        assert fastjson.dumps(data) == expected


def test_runs_whose_folders_are_gone_come_from_the_log(viewed, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(viewed["root"] / ".santa", copy / ".santa")
    shutil.rmtree(copy / ".santa" / "runs")
    data = data_of(copy)
    run = run_of(data, viewed["runs"]["year"].run_id)
    # Said once for the page, by the row's `folder`, not in each run's data.
    assert run["folder"] == "gone" and data["folder_notes"]["gone"] == GONE
    assert "notes" not in run["detail"]
    first = run["detail"]["rounds"][0]
    assert "output" not in first and "diff" not in first and "marks" not in first
    assert len(first["problems"]) == 2 and "details" not in first["reviews"][0]
    assert "escalation" not in run["detail"]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda r: r.update(slots={"B": {"reply": 7}}), "slots['B'].reply is not a string"),
        (lambda r: r.update(slots={KEY: {"reply": 7}}), "[REDACTED:Anthropic API Key]"),
        (lambda r: r["gates"][0]["issues"][0].update(criteria_by=1), "criteria_by is not an"),
        (lambda r: r["gates"][0]["issues"][0].update(flagged_by=1), "flagged_by is not a list"),
        (lambda r: r["gates"][0]["issues"][0].update(criteria=[1]), "criteria is not a list"),
        (lambda r: r["gates"][0]["issues"][0].update(quotes=2), "quotes is not a list"),
        (lambda r: r["gates"][0]["issues"][0].update(quote=[]), "quote is not a string"),
        *(
            (lambda r, k=key: r["gates"][0]["issues"][0].update({k: 5}), f"{key} is not a string")
            for key in ("evidence", "source", "key", "missing", "location")
        ),
        (
            lambda r: r["gates"][0]["issues"][0].update(criteria_by={"B": [3]}),
            "criteria_by['B'] is not a list of strings",
        ),
    ],
)
def test_a_run_state_this_santa_cannot_read_is_named_and_its_run_still_shown(
    viewed, tmp_path, damage, said
):
    copy = tmp_path / "copy"
    shutil.copytree(viewed["root"] / ".santa", copy / ".santa")
    damaged, intact = viewed["runs"]["year"].run_id, viewed["runs"]["clean"].run_id
    path = copy / ".santa" / "runs" / damaged / "state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    damage(state["rounds"][0])
    path.write_text(json.dumps(state), encoding="utf-8")
    data = data_of(copy)
    run = run_of(data, damaged)
    assert run["folder"] == "unreadable"
    (note,) = run["detail"]["notes"]
    assert "state.rounds[0]." in note and said in note, note
    assert KEY not in note  # a key of the file may be quoted: redacted
    assert "output" not in run["detail"]["rounds"][0]  # from the log only, not half read
    assert run_of(data, intact)["folder"] == "texts"


def test_folder_texts_and_details_beyond_the_budgets_are_left_out_and_say_so(viewed):
    root = viewed["root"]
    for budget in ({"text_budget": 1}, {"line_budget": 1}):
        src = collect(root / ".santa" / "log.jsonl", root / ".santa", **budget)
        assert src.folders[src.runs[0].run_id].texts  # the newest run's texts, then none
        assert not any(src.folders[r.run_id].texts for r in src.runs[1:])
    data = page_data(src, generated="x", since=None)
    kept = data["runs"][1]
    assert kept["folder"] == "kept" and data["folder_notes"]["kept"] == TEXTS_LEFT_OUT
    assert "output" not in kept["detail"]["rounds"][0]
    small = page_data(src, generated="x", since=None, page_budget=0)
    rows = small["runs"]
    assert all(r["detail"] is None for r in rows) and "santa view --since" in small["left_out"]
    assert {r["id"] for r in rows} == {r.run_id for r in src.runs}
    whole = len(embed_json(page_data(src, generated="x", since=None)))
    tight = page_data(src, generated="x", since=None, page_budget=whole - 1)
    assert [r["detail"] is None for r in tight["runs"]] == [False] * (len(rows) - 1) + [True]
    assert len(embed_json(tight)) <= whole - 1  # the oldest run's details went first


def test_secrets_in_a_run_folder_are_redacted(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    key = "sk-ant-api03-" + "Q" * 40
    target = tmp_path / "secret.md"
    target.write_text(f"# Tool\n\nUse the key {key} to log in.\n\n## License\nMIT\n")
    from santa_method.headless import verify_sync

    verify_sync(vp.SPEC, target, options=VerifyOptions(backend=vp.ScriptedModel()))
    assert key in next((tmp_path / ".santa" / "runs").glob("*/round-1/output.txt")).read_text()
    written = write_view(log_path=tmp_path / ".santa" / "log.jsonl", home=tmp_path / ".santa")
    html = written.path.read_text(encoding="utf-8")
    assert key not in html and "[REDACTED:Anthropic API Key]" in html


def _copy_batch(viewed: dict[str, Any], home: Path, name: str) -> dict[str, Any]:
    """The built batch's folder copied under `home` as `name`, its state loaded."""
    src = Path(viewed["root"]) / ".santa" / "batches" / viewed["batch"].batch_id
    dest = home / "batches" / name
    shutil.copytree(src, dest)
    return json.loads((dest / "state.json").read_text(encoding="utf-8"))


def _save_state(home: Path, name: str, state: Any) -> None:
    (home / "batches" / name / "state.json").write_text(json.dumps(state), encoding="utf-8")


def test_secrets_in_a_batch_folder_are_redacted_and_its_rubric_and_records_left_out(
    viewed, tmp_path
):
    key = "sk-ant-api03-" + "Q" * 40
    home = tmp_path / ".santa"
    name = "b-20990101-000000-abcdef"
    state = _copy_batch(viewed, home, name)
    wave = state["waves"][0]
    item = wave["items"][0]
    next(o for o in wave["outcomes"].values() if o["item"] == item)["reason"] = f"it quotes {key}"
    state["reasons"] = [f"the key {key} was seen"]
    state["items"][0]["record"] = {"text": "a record the page never shows"}
    state["options"]["rubric"]["name"] = "a rubric the page never shows"
    _save_state(home, name, state)
    (home / "batches" / name / "report.json").unlink()  # the state alone speaks

    written = write_view(log_path=home / "log.jsonl", home=home, out=tmp_path / "page.html")
    html = written.path.read_text(encoding="utf-8")
    assert key not in html and "[REDACTED:Anthropic API Key]" in html
    (batch,) = json.loads(_data_text(html))["batches"]
    shown = next(i for i in batch["detail"]["samples"][0]["items"] if i["item"] == item)
    assert shown["reason"] == "it quotes [REDACTED:Anthropic API Key]"
    assert batch["detail"]["reasons"] == ["the key [REDACTED:Anthropic API Key] was seen"]
    assert "rubric" not in batch["detail"]["options"]
    assert "never shows" not in html
    (files,) = collect(home / "log.jsonl", home).batches
    assert files.state.options.rubric == {}  # dropped before redaction, not just hidden
    assert all(i.record is None for i in files.state.items)


def _outcomes_set(key: str, value: Any) -> Any:
    """A damage: every outcome of the first sample gets `key` set to `value`."""

    def damage(s: dict[str, Any]) -> dict[str, Any]:
        wave = s["waves"][0]
        outcomes = {k: {**o, key: value} for k, o in wave["outcomes"].items()}
        return {**s, "waves": [{**wave, "outcomes": outcomes}, *s["waves"][1:]]}

    return damage


def test_an_item_id_or_criterion_that_looks_like_a_secret_is_redacted_where_it_is_a_key(
    viewed, tmp_path
):
    home = tmp_path / ".santa"
    name = "b-20990101-000000-abcdef"
    state = _copy_batch(viewed, home, name)
    wave = state["waves"][0]
    (criterion,) = wave["screens"]
    flagged = next(i for i, f in wave["screens"][criterion].items() if f["result"] == "flagged")
    text = json.dumps(state).replace(json.dumps(flagged), json.dumps(KEY))
    text = text.replace(json.dumps(criterion), json.dumps(KEY2))
    (home / "batches" / name / "state.json").write_text(text, encoding="utf-8")
    written = write_view(log_path=home / "log.jsonl", home=home, out=tmp_path / "page.html")
    html = written.path.read_text(encoding="utf-8")
    (batch,) = json.loads(_data_text(html))["batches"]
    (screen,) = batch["detail"]["samples"][0]["screens"]
    assert "[REDACTED:Anthropic API Key]" in [f["item"] for f in screen["flagged_items"]]
    assert screen["criterion"] == "[REDACTED:Anthropic API Key]"
    assert KEY not in html and KEY2 not in html


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda s: "{not json", "is unreadable"),
        (lambda s: [s], "is not a batch state"),
        (lambda s: {**s, "version": 99}, "written by a newer santa"),
        (lambda s: {**s, "items": "all"}, "state.items is not a list"),
        (lambda s: "[" * 5000 + "]" * 5000, "is unreadable"),
        *(
            (_outcomes_set(key, value), f"{key} is not a {what}")
            for key, value, what in (
                ("cost_usd", "cheap", "number or null"),
                ("run_id", 3, "string or null"),
                ("report", [], "string or null"),
                ("reason", {}, "string or null"),
            )
        ),
        (
            lambda s: {
                **s,
                "waves": [
                    {
                        **s["waves"][0],
                        "plan": {
                            **s["waves"][0]["plan"],
                            "strata": [
                                {"name": "a", "size": float("inf"), "quota": 1.0, "allocated": 1}
                            ],
                        },
                    }
                ],
            },
            "strata holds a stratum without its counts",
        ),
        (
            lambda s: {
                **s,
                "waves": [
                    {
                        **s["waves"][0],
                        "outcomes": {
                            k: {**o, "rounds": "three"}
                            for k, o in s["waves"][0]["outcomes"].items()
                        },
                    }
                ],
            },
            "rounds is not a whole number or null",
        ),
        (
            lambda s: {**s, "waves": [{**s["waves"][0], "screens": {KEY: {"x": {"result": 1}}}}]},
            "is not a string",
        ),
    ],
)
def test_a_batch_state_this_santa_cannot_read_is_named_and_the_page_still_built(
    viewed, tmp_path, damage, said
):
    home = tmp_path / ".santa"
    state = _copy_batch(viewed, home, "b-20990101-000000-abcdef")
    _copy_batch(viewed, home, "b-20990101-000001-abcdef")  # a good one beside it
    damaged = damage(state)
    text = damaged if isinstance(damaged, str) else json.dumps(damaged)
    (home / "batches" / "b-20990101-000000-abcdef" / "state.json").write_text(text)

    src = collect(home / "log.jsonl", home)
    data = page_data(src, generated="x", since=None)
    bad, good = (
        next(b for b in data["batches"] if b["id"].endswith(n)) for n in ("0-abcdef", "1-abcdef")
    )
    assert bad["detail"] is None and said in bad["problem"], bad["problem"]
    assert KEY not in bad["problem"]  # a key of the file may be quoted: redacted
    assert good["detail"] is not None and good["verdict"] == "ACCEPTED"


KEY = "sk-ant-api03-" + "Z" * 40
KEY2 = "sk-ant-api03-" + "Y" * 40


def test_since_keeps_later_runs_and_batches(viewed, tmp_path, capsys):
    out = tmp_path / "later.html"
    assert main(["view", "--since", "2999-01-01", "--out", str(out)]) == 0
    data = json.loads(_data_text(out.read_text(encoding="utf-8")))
    assert data["runs"] == [] and data["batches"] == [] and data["since"] == "2999-01-01"
    assert "No runs have been logged yet" in out.read_text(encoding="utf-8")
    assert main(["view", "--since", "yesterday"]) == 2
    assert "not a date" in capsys.readouterr().err


def test_bad_out_is_refused(viewed, tmp_path, capsys):
    assert main(["view", "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["view", "--out", str(tmp_path / "nowhere" / "v.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


def test_open_hands_the_file_to_the_browser(viewed, tmp_path, monkeypatch):
    opened: list[str] = []
    import webbrowser

    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    out = tmp_path / "v.html"
    assert main(["view", "--out", str(out), "--open"]) == 0
    assert opened == [out.resolve().as_uri()]


def test_damaged_log_lines_are_shown_as_warnings(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    log = tmp_path / ".santa" / "log.jsonl"
    runlog.append(log, {"run_id": "r1", "event": "run", "iteration": 0, "target": "a.md"})
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    data = data_of(tmp_path)
    assert [r["id"] for r in data["runs"]] == ["r1"] and data["runs"][0]["verdict"] == "open"
    assert any("line 2" in w for w in data["warnings"])


def test_a_headless_run_whose_process_is_gone_shows_as_interrupted(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path)
    log = tmp_path / ".santa" / "log.jsonl"
    record = {"event": "run", "iteration": 0, "target": "a.md", "source": "api"}
    runlog.append(log, {"run_id": "r-gone", **record})
    runlog.append(log, {"run_id": "r-hand", **record, "source": "files"})
    rows = {r["id"]: r for r in data_of(tmp_path)["runs"]}
    assert rows["r-gone"]["state"] == "interrupted" and rows["r-gone"]["verdict"] == "open"
    assert "santa run --resume r-gone" in rows["r-gone"]["detail"]["notes"][0]
    assert "state" not in rows["r-hand"]


# -- the pure parts ---------------------------------------------------------------------


def test_quotes_are_found_as_the_gate_finds_them():
    text = "He said “Hello\n   World” twice. hello world"
    located = Located(text)
    (first, *_rest) = located.spans('"hello world"')
    assert text[first[0] : first[1]] == "“Hello\n   World”"
    assert [text[s:e] for s, e in located.spans("hello world")] == ["hello world"]  # exact first
    assert located.spans("absent") == [] and located.spans("  ") == []


def test_overlapping_marks_are_cut_into_pieces():
    assert merge_spans([(0, 10, 1), (5, 15, 2)]) == [(0, 5, [1]), (5, 10, [1, 2]), (10, 15, [2])]
    assert merge_spans([]) == []


def test_a_diff_keeps_context_and_counts_what_it_skips():
    before = "\n".join(f"line {i}" for i in range(20))
    after = before.replace("line 10", "line ten")
    ops = line_diff(before, after)
    assert ["-", "line 10"] in ops and ["+", "line ten"] in ops
    assert ops[0] == ["~", "7 unchanged lines"] and ops[-1] == ["~", "6 unchanged lines"]
    assert line_diff(before, before) == []


def test_problems_read_both_shapes_of_the_gates_issues():
    old = problem({"criterion": "completeness", "issue": "x", "quote": "q", "flagged_by": ["B"]})
    assert old["criteria"] == ["completeness"] and old["quotes"] == ["q"] and old["by"] == ["B"]
    new = problem(
        {
            "criteria": ["no-hallucination", "factual-accuracy"],
            "criterion": "no-hallucination",
            "quotes": ["a", "b"],
            "quote": "a",
            "issue": "invented flag",
            "flagged_by": ["B", "C"],
        }
    )
    assert new["criteria"] == ["no-hallucination", "factual-accuracy"] and new["quotes"] == [
        "a",
        "b",
    ]
    damaged = problem({"criterion": 3, "quote": None, "flagged_by": "B"})
    assert damaged == {"criteria": ["unspecified"]}  # empty fields are left out


def test_needs_input_questions_come_from_the_notes_or_the_record():
    notes = "1. fixed: the year\n2. needs input: what is the price?\n3) Needs input: who owns it?"
    assert fix_report({"notes": notes})["questions"] == ["what is the price?", "who owns it?"]
    asked = fix_report({"notes": "", "questions": ["the SKU?", {"question": "the date?"}]})
    assert asked["questions"] == ["the SKU?", "the date?"]


def test_one_run_and_one_batch_are_counted_in_the_singular(tmp_path, monkeypatch, capsys):
    isolate(monkeypatch, tmp_path)
    runlog.append(
        tmp_path / ".santa" / "log.jsonl",
        {"run_id": "R1", "event": "run", "iteration": 0, "target": "a.md", "reviewers": 2},
    )
    assert main(["view"]) == 0
    out = capsys.readouterr().out
    assert ": 1 run, 0 batches" in out and "1 runs" not in out
