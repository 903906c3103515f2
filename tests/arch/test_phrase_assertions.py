"""Tests say what they check (issue 27, point 10): a test asserts stable kinds and data (an error's
``kind`` and fields, an exit code, a record's fields, ``--json``) and compares whole views with golden
files (tests/golden.py), rather than an English phrase found ``in`` some output -- a phrase pins how a
thing is said, so a better sentence breaks tests that still hold, and a wrong result passes as long as
the words are there.

What is left is the wording under test itself (the text sink's escaping, a hint whose exact command
line is the point) and the words of programs we do not own (ld.so's "version `FOO_2.0' not found",
SQLite's "database is locked", pip's messages). Their number may only fall: :data:`CEILING` is the
count when the rest was converted; a new phrase assertion fails here, naming the line.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# an English phrase (two words or more) asserted `in`/`not in` something, or matched by pytest.raises
PHRASE = re.compile(
    r"""assert .*"[^"]*[A-Za-z]{3,} [A-Za-z]{2,}[^"]*" (not )?in """
    r"""|assert .*'[^']*[A-Za-z]{3,} [A-Za-z]{2,}[^']*' (not )?in """
    r"""|match=r?"[^"]*[A-Za-z]{3,} [A-Za-z]{2,}|match=r?'[^']*[A-Za-z]{3,} [A-Za-z]{2,}"""
)
CEILING = 35  # 663 at 7859508; the rest: command lines, other programs' words (issue 27's note)


def phrase_assertions(root: Path = TESTS) -> list[str]:
    """Each phrase assertion under ``root`` as ``path:line``, this file's own patterns aside."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.resolve() == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PHRASE.search(line):
                found.append(f"{path.relative_to(root).as_posix()}:{number}")
    return found


def test_phrase_assertions_do_not_come_back() -> None:
    found = phrase_assertions()
    assert len(found) <= CEILING, (
        f"{len(found)} phrase assertions, more than the {CEILING} left (the wording under test, other "
        f"programs' words): assert the error's kind, the record's fields, the exit code or a golden file "
        f"instead; the newest are among: {found[-5:]}")


def test_the_count_sees_a_phrase_assertion(tmp_path: Path) -> None:
    """The detector finds each form it counts, and leaves data checks alone (it can fail)."""
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        'assert "no such file" in proc.stderr\n'
        "assert 'no folder given' not in text\n"
        'with pytest.raises(ValueError, match="must be a number"):\n'
        'assert err.kind == "lock-drift" and "libcuda.so.1" in err.message\n'
        'assert proc.returncode == 3\n', encoding="utf-8")
    assert phrase_assertions(tmp_path) == ["test_sample.py:1", "test_sample.py:2", "test_sample.py:3"]
