"""Write the modules fastjsonschema compiles from schemas/*.json.

    python scripts/compile_schemas.py [--check]

`santa validate` accepts a conforming reply with the compiled check instead
of importing jsonschema (core/schema.py says why). Run this after changing a
schema; `--check` only reports (exit 1) a module that is out of date, as
tests/test_schema.py does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from santa_method.core.schema import COMPILED, compiled_source

CORE = Path(__file__).resolve().parent / "santa_method" / "core"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale modules, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for module in COMPILED:
        target = CORE / f"{module}.py"
        text = compiled_source(module)
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(target)
        if not args.check:
            fd, tmp = tempfile.mkstemp(dir=CORE, prefix=f".{module}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, target)
    for target in stale:
        print(f"{'stale' if args.check else 'wrote'} {target}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
