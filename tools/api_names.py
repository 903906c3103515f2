#!/usr/bin/env python3
"""Write the tables of public names in docs/api.md from the package's one table of them
(``zluda_runner._PUBLIC``, in its order) and each name's docstring (its first sentence), so that a
name is written where it is defined and in that table, never again by hand.

    python tools/api_names.py          # rewrite docs/api.md
    python tools/api_names.py --check  # exit 1 when docs/api.md is stale (tests/api/test_docs.py)

Each table stands between ``<!-- names: KIND -->`` and ``<!-- end names -->``, KIND one of
:data:`HEADS`: the stable functions (``calls``) and records, the provisional names (in
``zluda_runner._PROVISIONAL``), the exceptions (``errors``), ``__version__``. The prose around them is
written by hand.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"
HEADS = {"calls": "what it does", "records": "what it holds", "provisional": "what it is",
         "errors": "raised when", "version": "what it is"}
_TABLE = re.compile(r"(<!-- names: (\w+) -->\n).*?(?=<!-- end names -->)", re.DOTALL)


def _kind(name: str, value: object, provisional: set[str]) -> str:
    if name == "__version__":
        return "version"
    if isinstance(value, type) and issubclass(value, BaseException):
        return "errors"
    if name in provisional:
        return "provisional"
    return "records" if isinstance(value, type) else "calls"


def _summary(name: str, value: object) -> str:
    """The first sentence of the docstring, as Markdown (``x`` and :role:`~a.b.x` as `x`)."""
    if name == "__version__":
        return f"This package's version ({value})."
    paragraph = " ".join((inspect.getdoc(value) or "").split("\n\n")[0].split())
    first = re.split(r"(?<=\.)\s+(?=[A-Z`])", paragraph, maxsplit=1)[0]
    first = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?([\w.]+)`", r"`\1`", first.removesuffix("::") + (
        "." if first.endswith("::") else ""))
    return first.replace("``", "`").replace("|", "\\|")


def tables() -> dict[str, str]:
    """Each kind's table, its rows in the order of ``zluda_runner._PUBLIC``."""
    sys.path.insert(0, str(ROOT))
    import zluda_runner as zr

    rows: dict[str, list[str]] = {kind: [] for kind in HEADS}
    for name in zr._PUBLIC:
        value = getattr(zr, name)
        rows[_kind(name, value, set(zr._PROVISIONAL))].append(f"| `{name}` | {_summary(name, value)} |\n")
    return {kind: f"| name | {head} |\n| --- | --- |\n" + "".join(rows[kind]) for kind, head in HEADS.items()}


def render(text: str) -> str:
    """``text`` (docs/api.md) with every table of names written anew; ValueError if one is missing."""
    made = tables()
    found = {m.group(2) for m in _TABLE.finditer(text)}
    if found != set(made):
        raise ValueError(f"docs/api.md's name tables: {sorted(found)}, expected {sorted(made)}")
    return _TABLE.sub(lambda m: m.group(1) + made[m.group(2)], text)


def main(argv: list[str]) -> int:
    text = DOC.read_text(encoding="utf-8")
    fresh = render(text)
    if "--check" in argv:
        if fresh != text:
            print("docs/api.md is stale: run python tools/api_names.py", file=sys.stderr)
        return int(fresh != text)
    DOC.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
