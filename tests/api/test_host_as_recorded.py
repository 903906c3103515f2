"""One host for every reader: a run's record (the run context's HostRead), ``record_result``,
``list_releases`` (what the store knows of this GPU) and ``run_doctor`` read the host through
plan/defaults_facts.read_host's tree and name it alike (a fake one here, ``ZLUDA_RUNNER_ROOT``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import zluda_runner as zr
from tests.doctor.test_doctor import rocm62_tree
from zluda_runner.api.options import to_settings
from zluda_runner.conduct.refs import run_refs
from zluda_runner.results.recordable import ResultRow, ResultRows
from zluda_runner.results.recording import known_on_this_gpu

SAME = ("gpu_name", "gfx", "hip_version", "driver_version")


class _Probe:
    def result_rows(self) -> ResultRows:
        return ResultRows((ResultRow("init.cuInit", "pass", True),))


def test_a_run_the_store_the_listing_and_the_doctor_name_one_host(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = rocm62_tree(tmp_path / "host", gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(root))
    options = zr.Options(results_db=str(tmp_path / "results.db"), cache_dir=tmp_path / "cache")
    settings = to_settings(options)

    run_host = run_refs(settings, planned=False).host  # what a recorded run names: its context's host
    assert zr.record_result("probe", _Probe(), options).recorded
    [stored] = zr.list_results(options)
    assert {k: stored.host.get(k) or None for k in SAME} == {k: run_host.get(k) or None for k in SAME}
    assert stored.gfx == "gfx1100" and stored.host["hip_version"] == "6.2"

    listing = zr.list_releases(options, select=False)  # the runs the store knows on this host's GPU
    known = list(listing.recorded_on_this_gpu)
    assert known and known == known_on_this_gpu(settings, stored.gfx)

    report = zr.run_doctor(options)  # the host as a run reads it: the same tree, the same GPU
    assert report.facts.root == root
    assert [g.gfx for g in report.facts.gpus] == [stored.gfx]
    assert report.facts.driver_version == stored.host["driver_version"]
