"""`santa demo`: the whole loop on a bundled example, offline, with no key."""

from __future__ import annotations

import argparse
from typing import Any

from santa_method.cli._io import echo, print_json
from santa_method.cli.run_cmd import LiveView

DESCRIPTION = """\
Watch the whole loop once, offline and with no key: two reviewers review
the README of a made-up tool (tally) against its spec and fail it, the
fixer changes only what they flagged, two fresh reviewers pass it, and the
page 'santa view' writes is made. It is the real loop (the same run state,
gate, log and page as 'santa run'); only the replies are replayed, from a
recording that ships with santa, and each is labelled for what it is:
recorded from a model, or written for the demo.

It works in a folder of its own (a new temporary one, or --dir DIR if DIR
is new or empty), with its own .santa/ and log: your project, its runs and
its metrics are never touched.

Exit codes: 0 the demo ended NICE, 1 it did not (a santa that no longer
ships the example), 2 the folder is not empty (or the recording does not
answer this santa's requests).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="watch the whole loop offline on a bundled example (no key needed)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--dir",
        metavar="DIR",
        help="a new or empty folder for the demo (default: a new temporary folder)",
    )
    p.add_argument("--open", action="store_true", help="open the page in a browser afterwards")
    p.add_argument("--json", action="store_true", help="print what happened as JSON")
    p.set_defaults(func=run)


class DemoView(LiveView):
    """The run's story on stdout, each reply labelled for what it is."""

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if data.get("origin") == "written":  # nothing was spent on a reply written by hand
            data = {**data, "cost_usd": None}
        super().__call__(kind, data)

    def who(self, data: dict[str, Any]) -> str:
        from santa_method.headless.backends.replay import with_origin

        origin = with_origin(str(data.get("origin")))
        model = data.get("model")
        return origin if not model or model == origin else f"{model}, {origin}"


def run(args: argparse.Namespace) -> int:
    from santa_method.headless.demo import OUTPUT, SPEC, new_folder, run_demo

    folder = new_folder(args.dir)  # refused before anything is said or run
    if not args.json:
        echo(
            "santa demo: the whole loop on a bundled example, offline. No model is called: "
            "every reply is replayed from a recording that ships with santa."
        )
        echo(
            f"The output under review is {OUTPUT}, the README of a made-up tool with planted "
            f"defects; {SPEC} says what it must hold.\n"
        )
    demo = run_demo(folder, on_event=DemoView(quiet=args.json, stderr=False))
    result = demo.result
    if args.json:
        print_json(demo.to_json())
    else:
        echo(f"\n{result.verdict} after {result.rounds} rounds (run {result.run_id}).")
        echo(f"folder:          {demo.folder} (its own .santa/: your project is untouched)")
        echo(f"verified output: {result.output_path}")
        echo(f"the run's page:  {demo.page}")
        echo(f"open {demo.page.resolve().as_uri()}#run/{result.run_id}")
        echo(
            "\nNext: santa run --against FILE --spec SPEC with your own output (an "
            "ANTHROPIC_API_KEY, or --backend claude with your Claude Code login)."
        )
    if args.open:
        import webbrowser

        webbrowser.open(f"{demo.page.resolve().as_uri()}#run/{result.run_id}")
    return 0 if result.verdict == "NICE" else 1
