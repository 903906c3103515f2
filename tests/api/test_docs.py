"""The API reference builds from the docstrings (pdoc, warnings are errors) and lists every public name
of ``zluda_runner.__all__`` with its docstring. ``.ci/run`` runs this test, so CI builds the reference."""

from __future__ import annotations

import html
import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import zluda_runner as zr
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]


def _words(text: str) -> str:
    """Text as a reader sees it: no markup, no roles, single spaces."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "").replace("`", "").replace("*", "")
    return " ".join(text.split())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    require(importlib.util.find_spec("pdoc") is not None, "pdoc is not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("api-docs")
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "pdoc", "--docformat", "google", "-o", str(out),
         "zluda_runner"],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Warn" not in proc.stderr, proc.stderr
    page = out / "zluda_runner.html"
    assert page.is_file(), sorted(p.name for p in out.iterdir())
    return page.read_text(encoding="utf-8")


def test_every_public_name_is_in_the_reference_with_its_docstring(reference: str) -> None:
    plain = _words(html.unescape(re.sub(r"<[^>]+>", " ", reference)))
    missing = []
    for name in zr.__all__:
        if f'id="{name}"' not in reference:
            missing.append(f"{name}: no entry")
            continue
        obj = getattr(zr, name)
        doc = "This package's version" if name == "__version__" else inspect.getdoc(obj) or ""
        first = _words(doc.split("\n\n")[0])[:60]
        if not first or first not in plain:
            missing.append(f"{name}: docstring {first!r} not shown")
    assert not missing, missing


def test_the_reference_is_only_the_public_surface(reference: str) -> None:
    """Internal stages (the launch or probe modules) are not documented as API."""
    assert 'id="to_settings"' not in reference and "zluda_runner.launch.prepare.html" not in reference


def _names_tool() -> Any:
    spec = importlib.util.spec_from_file_location("api_names", REPO / "tools" / "api_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tables_of_names_are_written_from_the_one_table() -> None:
    """docs/api.md's tables (and the package's imports for type checkers) are what tools/api_names.py
    writes from ``zluda_runner._PUBLIC`` and the docstrings: a name added, moved or redescribed there
    and not here fails this (run ``python tools/api_names.py``)."""
    tool, text = _names_tool(), (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    assert tool.render(text) == text, "docs/api.md is stale: run python tools/api_names.py"
    init = (REPO / "zluda_runner" / "__init__.py").read_text(encoding="utf-8")
    assert tool.render_init(init) == init, "__init__.py is stale: run python tools/api_names.py"
    listed = re.findall(r"^\| `([A-Za-z_]+)`", text, flags=re.MULTILINE)
    assert sorted(listed) == zr.__all__, "each public name once"
    assert zr.__version__ in text


def test_a_stale_table_of_names_is_found() -> None:
    """The check above can fail: a row missing, or a table missing, is not what the tool writes."""
    tool = _names_tool()
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    stale = re.sub(r"^\| `run` \|.*\n", "", text, flags=re.MULTILINE)
    assert stale != text and tool.render(stale) == text
    with pytest.raises(ValueError) as missing:
        tool.render(text.replace("<!-- names: errors -->", ""))
    assert str(missing.value).startswith("docs/api.md") and "'errors'" in str(missing.value)  # the table
    init = (REPO / "zluda_runner" / "__init__.py").read_text(encoding="utf-8")
    assert tool.render_init(init.replace("        run as run,\n", "")) == init
