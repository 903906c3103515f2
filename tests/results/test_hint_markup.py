"""The store's hints name commands in the neutral markup, so the API says the function (hunt of 2026-12-01).

On e29888c a missing bundle's hint said "`results export`" to an API caller too. This test fails there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import zluda_runner as zr
from zluda_runner.results.schema import ResultsStoreError


def test_a_missing_bundle_names_export_results_to_an_api_caller(tmp_path: Path) -> None:
    with pytest.raises(ResultsStoreError) as caught:
        zr.import_results([tmp_path / "none.jsonl"], zr.Options(results_db=str(tmp_path / "r.db")))
    assert "export_results()" in caught.value.hint and "`" not in caught.value.hint, caught.value.hint
