"""The interpreter's start-up facts: a ``._pth`` file (the portable layout) read by CPython's rules."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zluda_runner.inspection.interpreter import parse_pth, probe_interpreter, startup_of

# The file of the embeddable CPython 3.13 as ComfyUI's and SD.Next's portable bundles ship it.
PORTABLE = ["python313.zip", ".", "Lib\\site-packages", "",
            "# Uncomment to run site.main() automatically", "import site"]


def test_pth_lines_by_getpath_rules(tmp_path: Path) -> None:
    lines = ["a  # inline comment", "", "   ", "#import site", "import sys", "b/c", "import site"]
    paths, site = parse_pth(lines, str(tmp_path))
    assert paths == (str(tmp_path / "a"), str(tmp_path / "b" / "c")) and site is True
    _, commented = parse_pth(["python313.zip", "#import site"], str(tmp_path))
    assert commented is False


def test_a_pth_interpreter_ignores_pythonpath(tmp_path: Path) -> None:
    pth = tmp_path / "python313._pth"
    facts = {"pth_file": str(pth), "pth_lines": PORTABLE, "ignore_environment": True, "no_site": False,
             "sys_path": ["ignored"],
             "site_packages": [str(tmp_path), str(tmp_path / "Lib" / "site-packages")]}
    st = startup_of(facts)
    assert st is not None and st.portable and st.pth_file == str(pth)
    assert (st.honours_pythonpath, st.site_enabled) == (False, True)
    listed = os.path.normpath(os.path.join(str(tmp_path), "Lib\\site-packages"))  # the ._pth's own spelling
    assert st.sys_path == (str(tmp_path / "python313.zip"), str(tmp_path), listed)
    assert st.site_packages == (str(tmp_path), str(tmp_path / "Lib" / "site-packages"))
    no_site = startup_of({**facts, "pth_lines": PORTABLE[:-1]})
    assert no_site is not None and not no_site.site_enabled and no_site.site_packages == ()


def test_a_regular_interpreter_reports_its_own_flags() -> None:
    st = startup_of({"pth_file": None, "ignore_environment": False, "no_site": False,
                     "sys_path": ["/x/lib/python3.13"], "site_packages": ["/x/site"]})
    assert st is not None and not st.portable and st.honours_pythonpath and st.site_enabled
    assert st.sys_path == ("/x/lib/python3.13",) and st.site_packages == ("/x/site",)
    assert startup_of(None) is None  # an answer without the field (an older probe) says nothing


def test_probe_of_this_interpreter() -> None:
    """The probe run in a real interpreter (this one): no ._pth, PYTHONPATH honoured, its sys.path."""
    facts = probe_interpreter(sys.executable, env={**os.environ, "PYTHONPATH": ""})
    st = facts.startup
    assert st is not None and st.pth_file is None and st.honours_pythonpath
    assert st.site_enabled == (not sys.flags.no_site)
    assert os.path.dirname(os.__file__) in st.sys_path
