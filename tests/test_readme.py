"""README is for users; docs/ holds the rest, linked, each page saying what it is for.

Why: README had grown to nearly a thousand lines, with the main product (the
Claude Code command) one sentence deep and contributor notes inside the
quick start. These checks keep it short, keep the command near the top,
keep the two commands a newcomer needs (set up and run the main job; run
the tests) exactly as CI runs them, and keep every link to the moved pages
working: a link into a page or a heading that is not there is a lost fact.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SETUP = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' -c constraints.txt"
)
TESTS = ". .venv/bin/activate && pytest -n 2"
_LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def bash_blocks(text: str) -> list[list[str]]:
    return [
        [line for line in block.splitlines() if line.strip()]
        for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)
    ]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return [a or b for a, b in _LINK.findall(text)]


def test_readme_is_short_and_shows_the_command_near_the_top() -> None:
    lines = README.splitlines()
    assert len(lines) <= 400, len(lines)
    top = "\n".join(lines[:60])
    (first_block,) = re.findall(r"^```text\n(.*?)^```", top, re.M | re.S)[:1]
    assert "/santa-method:verify " in first_block


def test_the_sections_come_in_the_order_a_user_needs_them() -> None:
    # What it is, using it in Claude Code, headless and CI in brief, then
    # the two commands that set up and run the main job, and run the tests.
    headings = re.findall(r"^## (.+)$", _FENCE.sub("", README), re.M)
    order = ["Use it in Claude Code", "Headless and CI, in brief", "Set up, try it, run the tests"]
    assert [h for h in headings if h in order] == order
    assert README.index("/santa-method:verify") < README.index("## Use it in Claude Code")


def test_the_set_up_sets_up_and_runs_the_main_job_as_ci_sets_up() -> None:
    section = README.split("## Set up, try it, run the tests\n", 1)[1].split("\n## ", 1)[0]
    first, *rest = bash_blocks(section)
    assert first == [SETUP, "santa demo"]
    assert rest == [[TESTS]]
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # .ci/run makes the same venv and installs the same way, step by step.
    assert "python3 -m venv .venv" in ci_run and ". .venv/bin/activate" in ci_run
    assert "pip install --quiet -e '.[dev]' -c constraints.txt" in ci_run


def test_the_test_command_is_the_one_ci_runs() -> None:
    assert [TESTS] in bash_blocks(README)
    checks = (ROOT / ".ci" / "checks").read_text(encoding="utf-8").splitlines()
    ran = [shlex.split(line) for line in checks if line.startswith("pytest")]
    assert ran == [shlex.split(TESTS.split("&& ", 1)[1])]


def test_readme_names_every_slash_command_and_the_viewer() -> None:
    for command in sorted((ROOT / "commands").glob("*.md")):
        assert f"/santa-method:{command.stem}" in README, command.name
    for name in ("santa view", "santa demo", "santa run", "santa init"):
        assert f"`{name}" in README, name


def test_readme_links_every_docs_page_and_each_says_what_it_is_for() -> None:
    linked = {Path(target.split("#", 1)[0]) for target in links(ROOT / "README.md")}
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert page.relative_to(ROOT) in linked, f"README does not link {page.name}"
        text = page.read_text(encoding="utf-8")
        title, _, rest = text.partition("\n\n")
        assert title.startswith("# "), page.name
        assert rest.startswith("This page is for "), f"{page.name}: {rest[:60]!r}"


def test_every_link_of_readme_and_docs_reaches_a_file_and_heading() -> None:
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.is_file():
                broken.append(f"{page.name}: {target}")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_pages_readme_links_ship_in_the_sdist() -> None:
    """README is the package's description; what it links travels with it."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    included = pyproject["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    for target in links(ROOT / "README.md"):
        if re.match(r"[a-z]+:", target):
            continue
        path = target.partition("#")[0]
        assert any(path == item or path.startswith(item) for item in included), path


def test_the_slug_is_githubs() -> None:
    assert slug("Looking at runs: `santa view`") == "looking-at-runs-santa-view"
    assert slug("Half price: `anthropic-batch`") == "half-price-anthropic-batch"
    assert slug("The fixer's report") == "the-fixers-report"
