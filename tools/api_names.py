#!/usr/bin/env python3
"""Write what lists the public names from the package's one table of them (``zluda_runner._PUBLIC``,
in its order), so that a name is written where it is defined and in that table, never again by hand:
the tables of docs/api.md (each name with the first sentence of its docstring) and the imports for
type checkers in zluda_runner/__init__.py (``if TYPE_CHECKING:``).

    python tools/api_names.py          # rewrite both
    python tools/api_names.py --check  # exit 1 when one is stale (tests/api/test_docs.py)

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
INIT = ROOT / "zluda_runner" / "__init__.py"
HEADS = {"calls": "what it does", "records": "what it holds", "provisional": "what it is",
         "errors": "raised when", "version": "what it is"}
_TABLE = re.compile(r"(<!-- names: (\w+) -->\n).*?(?=<!-- end names -->)", re.DOTALL)
_FOR_TYPES = re.compile(r"^(if TYPE_CHECKING:.*\n)(?:    .*\n)*", re.MULTILINE)


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


def render_init(text: str) -> str:
    """``text`` (zluda_runner/__init__.py) with its imports for type checkers written anew."""
    sys.path.insert(0, str(ROOT))
    import zluda_runner as zr

    by_module: dict[str, list[str]] = {}
    for name, module in zr._PUBLIC.items():
        if name != "__version__":  # declared there, with its docstring
            by_module.setdefault(module, []).append(name)
    imports = "".join(f"    from {module} import (\n"
                      + "".join(f"        {n} as {n},\n" for n in sorted(names))
                      + "    )\n" for module, names in sorted(by_module.items()))
    return _FOR_TYPES.sub(lambda m: m.group(1) + imports, text, count=1)


def main(argv: list[str]) -> int:
    stale = []
    for path, write in ((DOC, render), (INIT, render_init)):
        text = path.read_text(encoding="utf-8")
        fresh = write(text)
        if fresh != text:
            stale.append(path.relative_to(ROOT))
            if "--check" not in argv:
                path.write_text(fresh, encoding="utf-8")
    if "--check" in argv and stale:
        print(f"stale: {', '.join(map(str, stale))}: run python tools/api_names.py", file=sys.stderr)
    return int("--check" in argv and bool(stale))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
