"""``results list`` (limit 50 by default) read every run of the store and kept the last 50 (found
2026-12-01): a store a CI machine records into for a year was loaded whole, host and summary JSON of each
run parsed, to show 50. Only the latest ``limit`` rows are read now, in the same order as before."""

from __future__ import annotations

import pytest

from tests.results import reports
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import ResultsStoreError
from zluda_runner.results.store import ResultsStore


def test_a_limited_list_reads_only_its_runs(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(12):
        outcome = record_report("torch-ops", reports.torch_ops(1, tag=str(i)), settings=Settings(
            results_db=store_url), command=["zluda-run", "probe"], host=reports.HOST,
            started_at=f"2026-11-{1 + i // 2:02d}T10:00:00.000000Z")  # two runs at each time: ties
        assert outcome.recorded, outcome.warning
    with make_store(store_url).open() as store:
        everything = store.list_runs()
        assert [r.started_at for r in everything] == sorted(r.started_at for r in everything)
        parsed: list[object] = []
        real = ResultsStore._run_from_row
        monkeypatch.setattr(ResultsStore, "_run_from_row",
                            lambda self, row: parsed.append(row) or real(self, row))
        latest = store.list_runs(limit=5)
        assert [r.run_id for r in latest] == [r.run_id for r in everything[-5:]]
        assert len(parsed) == 5
        assert [r.run_id for r in store.list_runs(limit=100)] == [r.run_id for r in everything]
        assert [r.run_id for r in store.list_runs(limit=3, since="2026-11-06")] == \
            [r.run_id for r in everything[-2:]]
        with pytest.raises(ResultsStoreError, match=r"^limit 0 "):
            store.list_runs(limit=0)
