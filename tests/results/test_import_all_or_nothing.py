"""``results import GOOD BAD`` (found 2026-12-01): on 500ed62 the runs of GOOD were stored, then BAD was
refused with an error (exit 1) that said nothing of GOOD; and a store named for an import was made even
when no bundle could be read (``results --results-db TYPO.db import nosuch.jsonl`` left an empty TYPO.db).
Every bundle is checked whole first now: a bad one stores nothing of any, and makes no store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zluda_runner as zr
from tests.results.test_matrix_cli import _cli, plant


@pytest.fixture()
def good(tmp_path: Path) -> Path:
    url = str(tmp_path / "src.db")
    plant(url, tmp_path)
    bundle = tmp_path / "good.jsonl"
    assert _cli("--results-db", url, "export", str(bundle), tmp_path=tmp_path)[0] == 0
    return bundle


def test_a_bad_bundle_after_a_good_one_stores_nothing(tmp_path: Path, good: Path) -> None:
    text = good.read_text(encoding="utf-8")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    into = tmp_path / "into.db"
    code, out = _cli("--results-db", str(into), "import", str(good), str(cut), "--json", tmp_path=tmp_path)
    assert code == 1 and json.loads(out)["error"].startswith(f"{cut}, line "), out
    assert not into.exists() and not Path(f"{into}-wal").exists()
    plant(str(into), tmp_path)  # an existing store gets nothing of the good bundle either
    before = len(zr.list_results(zr.Options(results_db=str(into)), limit=None))
    with pytest.raises(zr.ResultsStoreError):
        zr.import_results([good, tmp_path / "nosuch.jsonl"], zr.Options(results_db=str(into)))
    assert len(zr.list_results(zr.Options(results_db=str(into)), limit=None)) == before


def test_an_import_of_no_bundle_makes_no_store(tmp_path: Path) -> None:
    typo = tmp_path / "TYPO.db"
    missing = tmp_path / "nosuch.jsonl"
    code, out = _cli("--results-db", str(typo), "import", str(missing), "--json", tmp_path=tmp_path)
    error = json.loads(out)
    assert code == 1 and error["kind"] == "results-store" and str(missing) in error["error"], out
    assert sorted(p.name for p in tmp_path.iterdir()) == [], sorted(p.name for p in tmp_path.iterdir())


def test_good_bundles_are_all_stored(tmp_path: Path, good: Path) -> None:
    into = tmp_path / "into.db"
    code, out = _cli("--results-db", str(into), "import", str(good), str(good), "--json", tmp_path=tmp_path)
    assert code == 0 and json.loads(out)["imported"] == 7 and json.loads(out)["already_stored"] == 7, out
