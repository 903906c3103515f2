"""Golden files: a view's whole text against a checked-in copy (issue 27, point 10).

A test renders a view from fixed inputs and calls :func:`assert_golden`; the text is compared with
``tests/golden/NAME.txt`` and a difference fails with a diff. ``ZLUDA_RUNNER_UPDATE_GOLDEN=1`` writes
the files instead (then review them with ``git diff``). What depends on the host is replaced first:
each folder given (a test's ``tmp_path``: ``<tmp>``), the repository (``<repo>``), this interpreter
(``<python>``), the program's version (``<version>``) and a time of day (``<time>``, a UTC
timestamp). A path's length decides where a line folds and how wide a column is, so a test that shows
its inputs' folders runs in ``tmp_path`` (``monkeypatch.chdir``) and names them relatively, at
``COLUMNS=80``: the view as a terminal shows it.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

from zluda_runner import __version__

GOLDEN = Path(__file__).resolve().parent / "golden"
REPO = GOLDEN.parents[1]
UPDATE = "ZLUDA_RUNNER_UPDATE_GOLDEN"
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def normalised(text: str, **folders: Path) -> str:
    """``text`` with each host-dependent path or version replaced by its ``<name>`` (longest first)."""
    places = {f"<{name}>": folder for name, folder in folders.items()}
    places.update({"<repo>": REPO, "<python>": Path(sys.executable)})
    spellings = sorted(((str(form), name) for name, path in places.items()
                        for form in {path, path.resolve()}), key=lambda pair: -len(pair[0]))
    for spelled, name in spellings:
        text = text.replace(spelled, name)
    return TIME.sub("<time>", text.replace(__version__, "<version>"))


def assert_golden(name: str, text: str, **folders: Path) -> None:
    """``text``, normalised, is ``tests/golden/<name>.txt`` (``ZLUDA_RUNNER_UPDATE_GOLDEN=1``: becomes it)."""
    got = normalised(text, **folders)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get(UPDATE) == "1":
        golden.write_text(got, encoding="utf-8")
        return
    assert golden.is_file(), f"no golden file {golden}: run with {UPDATE}=1 and review it"
    want = golden.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        f"golden/{name}.txt", "rendered"))
    assert got == want, f"{name} differs from its golden file (review, then {UPDATE}=1 to accept):\n{diff}"
