"""The terminal's width as ``shutil.get_terminal_size()`` reads it (core/termsize), without importing shutil:
``COLUMNS`` when it is a positive number, else the width of standard output's terminal, else 80. Compared
with shutil itself in the same process, on a real pseudo-terminal of 57 columns and piped."""

from __future__ import annotations

import pytest

from tests.core.test_textfit_width import probe_output

PROBE = ("import json, sys\nfrom zluda_runner.core.termsize import terminal_columns\n"
         "ours, imported = terminal_columns(), 'shutil' in sys.modules\nimport shutil\n"
         "print(json.dumps([ours, shutil.get_terminal_size().columns, imported]), file=sys.stderr)")


@pytest.mark.parametrize("env_columns", [None, "", "0", "-3", "abc", "100", " 90"])
@pytest.mark.parametrize("on_terminal", [True, False])
def test_the_width_is_shutil_s(env_columns: str | None, on_terminal: bool) -> None:
    ours, theirs, imported = probe_output(PROBE, env_columns, on_terminal=on_terminal)
    assert ours == theirs and not imported
    expected = {"100": 100, " 90": 90}.get(env_columns or "", 57 if on_terminal else 80)
    assert ours == expected
