"""`santa view` in a real headless Chromium (the system's, driven by Playwright).

What a person would check by looking: the page renders (a screenshot that
is not blank), every run is listed with its verdict, a run's page shows
both reviewers' checks and who raised each problem, hostile text in an
output stays text, nothing is written to the console as an error, and no
request leaves `file://`. The runs are real (`_view_project.py`).

Chromium comes from the system (`.ci/run` installs Debian's `chromium`;
`SANTA_CHROMIUM` names another binary). Where none is installed these
tests skip, except in CI, where that is a failure.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _view_project as vp
from santa_method.state.history import summarise_runs
from santa_method.view import write_view

CHROMIUM = (
    os.environ.get("SANTA_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
    or shutil.which("google-chrome")
)
REPO = Path(__file__).resolve().parents[1]
SCREENSHOT = REPO / "docs" / "view-run.png"
VERDICT = {"shipped": "NICE", "nice": "NICE", "escalated": "ESCALATED", "open": "open"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM:
        message = (
            "no Chromium to test the viewer in: apt-get install chromium (or set SANTA_CHROMIUM)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from vp.built_project(tmp_path_factory)


class Visit:
    """One page in a fresh browser context, recording what a person cannot see:
    console errors, script errors, and every request (any but file:// is aborted)."""

    def __init__(self, browser: Any, path: Path, width: int = 1280) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        self.uri = path.resolve().as_uri()
        self.page.goto(self.uri)

    def _route(self, route: Any) -> None:
        self.requests.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"console {message.type}: {message.text}")

    def open(self, fragment: str) -> Any:
        self.page.evaluate("f => { location.hash = f; }", fragment)
        self.page.wait_for_function("f => location.hash === f", arg=fragment)
        return self.page

    def close(self) -> None:
        """Check what must hold on every page, then close it."""
        try:
            assert self.errors == []
            assert self.requests and all(u.startswith(self.uri) for u in self.requests), (
                self.requests
            )
        finally:
            self.context.close()


@pytest.fixture
def page_of(browser: Any) -> Iterator[Any]:
    visits: list[Visit] = []

    def visit(path: Path, width: int = 1280) -> Visit:
        visits.append(Visit(browser, path, width))
        return visits[-1]

    yield visit
    for v in visits:
        v.close()


def not_blank(png: bytes) -> bool:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    colours = image.getcolors(maxcolors=1 << 16) or []
    return len(colours) > 20 and image.getextrema()[1] - image.getextrema()[0] > 100


def page_for(built: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    vp.isolate(monkeypatch, built["root"])
    home = built["root"] / ".santa"
    return write_view(log_path=home / "log.jsonl", home=home).path


def test_the_overview_lists_every_run_with_its_verdict(built, page_of, monkeypatch):
    v = page_of(page_for(built, monkeypatch))
    page = v.page
    assert not_blank(page.screenshot(full_page=True))
    assert page.locator(".card").first.is_visible()
    assert page.locator("svg.chart").count() == 6
    shown = {
        row.get_attribute("data-id"): row.locator(".badge").first.inner_text()
        for row in page.locator("#table tbody tr").all()
    }
    rows, _ = summarise_runs(built["root"] / ".santa" / "log.jsonl")
    assert len(rows) < 50  # one page of the table holds them all
    for row in rows:
        assert shown.pop(row["run_id"]) == VERDICT[row["outcome"]]
    assert shown == {built["batch"].batch_id: "ACCEPTED"}


def test_the_table_sorts_filters_and_links(built, page_of, monkeypatch):
    v = page_of(page_for(built, monkeypatch))
    page = v.page
    year = built["runs"]["year"].run_id
    page.fill("#table input[type=search]", year[-6:])
    assert [r.get_attribute("data-id") for r in page.locator("#table tbody tr").all()] == [year]
    page.fill("#table input[type=search]", "")
    page.select_option("#table select[aria-label=kind]", "batch")
    assert page.locator("#table tbody tr").count() == 1
    page.select_option("#table select[aria-label=kind]", "all")
    page.select_option("#table select[aria-label=verdict]", "ESCALATED")
    ids = {r.get_attribute("data-id") for r in page.locator("#table tbody tr").all()}
    assert ids == {built["runs"]["stuck"].run_id, built["runs"]["price"].run_id}
    page.select_option("#table select[aria-label=verdict]", "all")
    page.click("#table th:has-text('rounds')")  # a new column sorts ascending
    rounds = [
        int(c.inner_text().split()[0])
        for c in page.locator("#table tbody td[data-label=rounds]").all()
    ]
    assert rounds == sorted(rounds)
    page.click(f"#table a:has-text('{year}')")
    page.wait_for_selector("#page h1")
    assert year in page.inner_text("#page h1")
    page.go_back()
    page.wait_for_selector("#overview .card")
    assert page.locator("#page").is_hidden()


def test_a_run_page_shows_both_reviewers_flags(built, page_of, monkeypatch):
    v = page_of(page_for(built, monkeypatch))
    page = v.open("#run/" + built["runs"]["year"].run_id)
    first = page.locator("#round-1")
    heads = [h.inner_text() for h in first.locator("table.checks thead th").all()]
    assert heads[1].startswith("reviewer B") and "FAIL" in heads[1]
    assert heads[2].startswith("reviewer C") and "FAIL" in heads[2]
    problems = first.locator("ol.problems > li")
    assert problems.count() == 2
    assert "the release year is wrong" in problems.nth(0).inner_text()
    assert "raised by B and C" in problems.nth(0).inner_text()
    assert "only B raised this" in problems.nth(1).inner_text()
    marks = [m.inner_text() for m in first.locator("pre.output mark").all()]
    assert marks == ["Released in 1999.1", "the --turbo flag2"]  # quote, then its problem's number
    assert "fixed: the year is now 2024" in first.locator(".fix").inner_text()
    diff = page.locator("#round-2 .diff")
    assert "Released in 2024." in diff.locator(".add").first.inner_text()
    assert page.locator(".journey").inner_text().replace("\n", " ").count("round") == 2
    png = page.screenshot(full_page=False)
    assert not_blank(png)
    keep_screenshot(page)


def test_a_run_page_shows_each_reply_whole_with_its_model_tokens_cost_and_time(
    built, page_of, monkeypatch
):
    from santa_method.state.store import load_state

    run_id = built["runs"]["year"].run_id
    page = page_of(page_for(built, monkeypatch)).open("#run/" + run_id)
    replies = page.locator("#round-1 .replies details.reply")
    assert replies.count() == 2
    b = replies.nth(0)
    summary = b.locator("summary").inner_text()
    assert summary.startswith("Reviewer B's reply")
    assert "claude-sonnet-4-5 · 2,300 tokens · $0.0042 · " in summary and summary.endswith(" s")
    raw = b.locator("pre.raw")
    assert raw.is_hidden()  # folded until asked for
    b.locator("summary").click()
    assert raw.is_visible()
    slot = load_state(run_id).rounds[0].slots["B"]
    assert raw.inner_text() == slot.reply  # whole, as it came back
    fixer = page.locator("#round-1 .fix")
    assert (
        "claude-sonnet-4-5 · 1,300 tokens · $0.0030 · " in fixer.locator("h3 .facts").inner_text()
    )
    fixer.locator("details.reply summary").click()
    assert "1. fixed: the year is now 2024" in fixer.locator("pre.raw").inner_text()


def test_the_table_says_how_many_problems_and_why_each_run_ended(built, page_of, monkeypatch):
    page = page_of(page_for(built, monkeypatch)).page

    def cells(name: str) -> tuple[str, str]:
        row = page.locator(f"#table tbody tr[data-id='{built['runs'][name].run_id}']")
        return (
            row.locator("td[data-label=problems]").inner_text(),
            row.locator("td[data-label='why it ended']").inner_text(),
        )

    assert cells("year") == ("2 → 0", "shipped: NICE in round 2")
    problems, why = cells("price")
    assert problems == "1" and why.startswith("needs-input (the fixer asked a question")
    assert cells("stuck")[1].startswith("fixes exhausted")
    page.click("#table th:has-text('problems')")
    counts = [
        int(c.inner_text().split()[0])
        for c in page.locator("#table tbody tr:not([data-id^='b-']) td[data-label=problems]").all()
    ]
    assert counts == sorted(counts)


def test_nothing_is_wider_than_a_400_px_screen(built, page_of, monkeypatch):
    """At 400 px the page fits the screen: the table's rows become cards, and
    no round, table or text pushes the page sideways."""
    v = page_of(page_for(built, monkeypatch), width=400)
    page = v.page

    def width() -> int:
        return int(page.evaluate("document.documentElement.scrollWidth"))

    assert width() == 400
    assert page.locator("#table thead").is_hidden()
    row = page.locator("#table tbody tr").first
    kind, verdict = row.locator("td[data-label=kind]"), row.locator("td[data-label=verdict]")
    assert kind.bounding_box()["y"] < verdict.bounding_box()["y"]  # a card: one field a line
    label = page.evaluate(
        "e => getComputedStyle(e, '::before').content", row.locator("td").first.element_handle()
    )
    assert label == '"kind"'
    assert not_blank(page.screenshot(full_page=True))
    for name in built["runs"]:
        page = v.open("#run/" + built["runs"][name].run_id)
        page.wait_for_selector("#page h1")
        # Every fold open (the replies too), as a reader would leave them.
        page.evaluate("document.querySelectorAll('#page details').forEach(d => { d.open = true; })")
        assert width() == 400, name
    page = v.open("#batch/" + built["batch"].batch_id)
    page.wait_for_selector("#page h1")
    assert width() == 400


def keep_screenshot(page: Any) -> None:
    """With SANTA_VIEW_SCREENSHOT=1, save the README's picture of a run's page
    (the top of it, reduced to a palette so it stays small)."""
    if os.environ.get("SANTA_VIEW_SCREENSHOT") != "1":
        return
    from PIL import Image

    page.set_viewport_size({"width": 1100, "height": 900})
    png = page.screenshot(clip={"x": 0, "y": 0, "width": 1100, "height": 900})
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=48)
    SCREENSHOT.parent.mkdir(exist_ok=True)
    image.save(SCREENSHOT, optimize=True)


def test_hostile_text_in_an_output_does_not_run(built, page_of, monkeypatch):
    v = page_of(page_for(built, monkeypatch))
    page = v.open("#run/" + built["runs"]["hostile"].run_id)
    page.wait_for_selector("#round-1 pre.output")
    assert vp.HOSTILE in page.locator("#round-1 pre.output").inner_text()
    assert vp.HOSTILE in page.locator("#round-1 ol.problems").inner_text()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("#page script").count() == 0


def test_an_escalated_run_and_the_batch_read_as_a_person_needs(built, page_of, monkeypatch):
    v = page_of(page_for(built, monkeypatch))
    page = v.open("#run/" + built["runs"]["price"].run_id)
    escalation = page.locator(".escalation").inner_text()
    assert "a person takes over" in escalation and "needs-input" in escalation
    assert "what is the price of the Pro plan?" in page.locator("#round-1 .question").inner_text()
    page = v.open("#batch/" + built["batch"].batch_id)
    text = page.inner_text("#page")
    assert "ACCEPTED" in text and "Screen for completeness" in text
    assert built["batch"].to_json()["guarantee"] in text
    assert page.locator(".interval svg").count() == 2
    assert page.locator("#page .round").count() == len(built["batch"].to_json()["waves"])
    run = next(o.run_id for o in built["batch"].outcomes if o.status == "fixed")
    page.click(f"#page a:has-text('{run}')")
    page.wait_for_selector("#page #round-2")


def test_a_run_without_its_folder_says_what_is_missing(built, page_of, tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    shutil.copytree(built["root"] / ".santa", copy / ".santa")
    shutil.rmtree(copy / ".santa" / "runs")
    home = copy / ".santa"
    path = write_view(log_path=home / "log.jsonl", home=home).path
    page = page_of(path).open("#run/" + built["runs"]["year"].run_id)
    assert "The run folder is gone" in page.inner_text(".notice")
    assert page.locator("#round-1 ol.problems > li").count() == 2
    assert page.locator("pre.output").count() == 0


def test_an_empty_project_is_a_friendly_page(page_of, tmp_path, monkeypatch):
    vp.isolate(monkeypatch, tmp_path)
    path = write_view(log_path=tmp_path / ".santa" / "log.jsonl", home=tmp_path / ".santa").path
    page = page_of(path).page
    assert "No runs have been logged yet" in page.inner_text("#overview")
    assert not_blank(page.screenshot())


@pytest.mark.slow
def test_ten_thousand_runs_page_within_the_page(built, page_of, tmp_path, monkeypatch):
    home = tmp_path / ".santa"
    home.mkdir()
    ids = vp.clone_log(built["root"] / ".santa" / "log.jsonl", home / "log.jsonl", 10_000)
    written = write_view(log_path=home / "log.jsonl", home=home)
    assert written.runs == 10_000 and written.bytes < 10_000_000
    page = page_of(written.path).page
    pager = page.locator("#table .pager span")
    assert pager.inner_text() == "rows 1 to 50 of 10000 (page 1 of 200)"
    assert page.locator("#table tbody tr").first.get_attribute("data-id") == ids[-1]
    page.click("#table .pager button:has-text('next')")
    assert pager.inner_text() == "rows 51 to 100 of 10000 (page 2 of 200)"
    page.fill("#table input[type=search]", ids[0])
    assert [r.get_attribute("data-id") for r in page.locator("#table tbody tr").all()] == [ids[0]]
    page.evaluate("f => { location.hash = f; }", "#run/" + ids[0])
    page.wait_for_selector("#page h1")
    assert ids[0] in page.inner_text("#page h1")
    assert written.detailed == written.runs  # every run's page has its rounds
    assert page.locator("#page #round-1").count() == 1


@pytest.fixture(scope="module")
def large(built: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A log of 3,000 real runs (copies of the built ones under new ids) and its page."""
    home = tmp_path_factory.mktemp("large") / ".santa"
    home.mkdir()
    ids = vp.clone_log(built["root"] / ".santa" / "log.jsonl", home / "log.jsonl", 3_000)
    rows, _ = summarise_runs(home / "log.jsonl")
    outcome = {row["run_id"]: row["outcome"] for row in rows}
    return {
        "ids": ids,
        "outcome": outcome,
        "written": write_view(log_path=home / "log.jsonl", home=home),
    }


def test_a_run_on_the_last_page_of_a_large_log_shows_its_verdict(large, page_of):
    written, oldest = large["written"], large["ids"][0]
    assert written.runs == 3_000 and written.detailed == written.runs
    expected = VERDICT[large["outcome"][oldest]]
    page = page_of(written.path).page
    page.click("#table .pager button:has-text('last')")
    assert page.inner_text("#table .pager span") == "rows 2951 to 3000 of 3000 (page 60 of 60)"
    row = page.locator("#table tbody tr").last
    assert row.get_attribute("data-id") == oldest  # newest first: the oldest run is last
    assert row.locator(".badge").first.inner_text() == expected
    row.locator(f"a:has-text('{oldest}')").click()
    page.wait_for_selector("#page h1")
    assert oldest in page.inner_text("#page h1")
    assert page.locator("#page h1 .badge").first.inner_text() == expected
    assert page.locator("#page #round-1 table.checks").count() == 1  # its details, not left out
    assert "were left out" not in page.inner_text("#page")
    page.go_back()
    page.wait_for_selector("#overview .card")
    assert page.inner_text("#table .pager span").startswith("rows 2951 to 3000")
