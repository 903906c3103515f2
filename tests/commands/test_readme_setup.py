"""Issue 29, a newcomer's third bullet: the README's Set up says what really happens. On 7859508 it said
the main job exits 2 without a GPU (on a host with Debian's HIP 5.2 it exits 3: nothing fits), gave a
"~3 GB download" that made a 5.5 GB venv (no figure was measured), called `torch==2.13.0` the CPU build
(it is that only from our local disk; on PyPI it is the CUDA build) and gave the pdoc command without
saying it needs `.venv-test` (pdoc is a test dependency). The two set-up commands stay as CI runs them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.release.selection import NothingFitsError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
SETUP = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _prose(section: str) -> str:
    """The section without its code blocks, its lines joined (a sentence may wrap)."""
    return " ".join(re.sub(r"```.*?```", " ", section, flags=re.S).split())


def test_the_set_up_commands_are_the_ones_ci_runs() -> None:
    commands = re.findall(r"```sh\n(.+?)\n```", SETUP)[:2]
    assert commands[1] == ("python3 -m venv .venv-test && .venv-test/bin/pip install -e '.[test]' "
                           "torch==2.13.0 && .venv-test/bin/python -m pytest")
    # installed as the wheel (pip install .): on Linux x86-64 it carries the shims, no compiler needed
    assert commands[0].startswith("python3 -m venv .venv && .venv/bin/pip install . torch numpy && ")


def test_the_main_job_exit_codes_are_both_said() -> None:
    said = {int(code) for code in re.findall(r"exits (\d+)", _prose(SETUP))}
    assert said == {2, CHECK_FAILED}  # infer.py's own 2 without a device; 3 where no release fits the HIP
    assert NothingFitsError.exit_code == CHECK_FAILED


def test_no_size_that_was_not_measured_and_the_cpu_index_is_given() -> None:
    prose = _prose(SETUP)
    assert not re.search(r"\d+(\.\d+)?\s*[GT]B\b", prose)  # no gigabyte figure: none was measured here
    assert CPU_INDEX in prose.replace(" ", "")


def test_the_pdoc_command_says_which_venv_has_pdoc() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(d.startswith("pdoc") for d in project["dependencies"])
    assert any(d.startswith("pdoc") for d in project["optional-dependencies"]["test"])
    prose = _prose(README)
    for at in [m.start() for m in re.finditer(r"-m pdoc", prose)]:
        assert ".venv-test" in prose[at: at + 200], prose[at: at + 200]
