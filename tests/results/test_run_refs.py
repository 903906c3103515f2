"""Every kind of run records the release and the torch it ran with, ``--zluda-dir`` included, from one place
(the run's plan: :func:`zluda_runner.conduct.refs.run_refs`), so that ``results matrix`` files it under that
release x torch and not with the doctor's runs under ``none``/``-`` (issue 27, point 5). The target is the
fake CUDA torch of tests/inspection (real ELF stand-ins, a ``version.py`` as torch writes it) found on
``PYTHONPATH``, the release a stand-in ZLUDA folder (``zluda_runner.devtools.standin``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import require
from tests.inspection.conftest import FakeTorch, elf_stand_ins, fake_torch  # noqa: F401 -- fixtures
from zluda_runner.cli import main_group
from zluda_runner.devtools.standin import build_release, libs_from_spec
from zluda_runner.results.backends import SQLiteStore
from zluda_runner.results.matrix import build_matrix
from zluda_runner.results.schema import RunRecord

TORCH = "2.14.1+cu130"  # the fake torch's version.py (cuda "13.0")


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ZLUDA-like Linux release folder holding a stand-in libcuda.so.1."""
    base = tmp_path_factory.mktemp("refs-release")
    return build_release(libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}}), base / "zluda",
                         build_dir=base / "build")


class ZludaRun:
    """``zluda-run --zluda-dir RELEASE --force ARGS`` (the release has no cuBLAS: fatal, run all the same),
    in-process; returns the runs stored in ``db`` so far."""

    def __init__(self, release: Path, tmp_path: Path) -> None:
        self.release, self.cache, self.db = release, tmp_path / "cache", tmp_path / "results.db"

    def __call__(self, *args: str, codes: tuple[int, ...] = (0, 3)) -> list[RunRecord]:
        result = CliRunner().invoke(main_group, ["--cache-dir", str(self.cache), "--results-db", str(self.db),
                                                 "--zluda-dir", str(self.release), "--force", *args])
        assert result.exit_code in codes, (result.output, result.exception)
        with SQLiteStore(self.db).open() as store:
            return store.list_runs()


@pytest.fixture()
def zluda_run(release: Path, fake_torch: FakeTorch, tmp_path: Path,  # noqa: F811 -- the fixture
              monkeypatch: pytest.MonkeyPatch) -> ZludaRun:
    """:class:`ZludaRun`, with the fake torch as this interpreter's."""
    monkeypatch.setenv("PYTHONPATH", str(fake_torch.site_packages))
    return ZludaRun(release, tmp_path)


def _refs(runs: list[RunRecord]) -> list[tuple[str, str, str]]:
    return [(run.kind, run.release_id, run.torch_build) for run in runs]


def test_a_driver_probe_records_the_release_and_the_target_torch(zluda_run: ZludaRun, standin: Path) -> None:
    runs = zluda_run("probe", "--case", "init.cuInit")  # the release's driver: its plan
    runs += zluda_run("probe", "--libcuda", str(standin), "--case", "init.cuInit")[1:]  # a driver by path
    assert _refs(runs) == [("probe", "zluda-dir", TORCH)] * 2  # 7859508: "none" and "-"


def test_torch_ops_record_the_plans_release_and_torch(zluda_run: ZludaRun) -> None:
    # under ZLUDA (the fake torch cannot be imported: the probe could not run, and is recorded all the same)
    ops = ("--ops", "add", "--dtypes", "float32")
    runs = zluda_run("probe", "--torch", *ops, codes=(1,))  # 1: could not run
    runs += zluda_run("probe", "--torch", "--device", "cpu", *ops, codes=(1,))[1:]
    assert _refs(runs) == [("torch-ops", "zluda-dir", TORCH)] * 2  # 7859508: "none" and "-"


def test_doctor_records_the_release_and_torch_it_judged(zluda_run: ZludaRun, release: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import zluda_runner.doctor
    from tests.results import reports
    from zluda_runner import Options, list_results, run_doctor

    # this host's doctor (only that one is recorded, not a fake root's) made up: its checks are not the point
    monkeypatch.setattr(zluda_runner.doctor, "run_doctor", lambda options: reports.doctor_report())
    options = Options(cache_dir=zluda_run.cache, results_db=str(zluda_run.db), zluda_dir=release)
    run_doctor(options)
    assert _refs(list_results(options)) == [("doctor", "zluda-dir", TORCH)]  # 7859508: "none" and "-"


def test_ab_records_side_a_release_and_torch_and_its_options(zluda_run: ZludaRun, tmp_path: Path) -> None:
    script = tmp_path / "bench.py"
    script.write_text("print('hi')\n", encoding="utf-8")
    side = f"{sys.executable} {script}"
    [run] = zluda_run("ab", "--runs", "1", "--a-cmd", side, "--b-cmd", side)
    assert _refs([run]) == [("ab", "zluda-dir", TORCH)]  # 7859508: "none" and "-"
    assert run.command[run.command.index("ab"):][:4] == ["ab", "--runs", "1", "--a-cmd"]


def test_poc_and_verify_load_record_release_torch_and_options(zluda_run: ZludaRun, tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text("print('hi')\n", encoding="utf-8")
    [poc] = zluda_run("poc", "--runs", "1", "--min-speedup", "0", "--", sys.executable, str(script))
    runs = zluda_run("plan", "--verify-load", codes=(0, 1, 3))
    assert _refs(runs) == [("poc", "zluda-dir", TORCH), ("verify-load", "zluda-dir", TORCH)]
    verify = runs[1].command
    assert poc.command[poc.command.index("poc"):][:5] == ["poc", "--runs", "1", "--min-speedup", "0.0"]
    assert {"--zluda-dir", "--force", "--verify-load"} <= set(verify[:-1]) and verify[-1] == "plan"
    assert "--zluda-dir" in poc.command  # 7859508: ["plan", "--verify-load"] and poc's options lost


def test_the_matrix_files_each_run_under_its_release_and_torch(zluda_run: ZludaRun, standin: Path) -> None:
    zluda_run("probe", "--libcuda", str(standin), "--case", "init.cuInit")
    zluda_run("probe", "--torch", "--device", "cpu", "--ops", "add", "--dtypes", "float32", codes=(1,))
    with SQLiteStore(zluda_run.db).open() as store:
        cells = build_matrix(store).cells
    assert [(c.release, c.torch, c.probe is not None, c.torch_ops is not None) for c in cells] == [
        ("zluda-dir", TORCH, True, True)]  # 7859508: under ("none", "-"), with the doctor's runs


def test_a_run_whose_target_cannot_be_planned_records_the_resolvers_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU torch (this environment's) has no plan: the doctor's run names the release the one resolver
    picks for the host's HIP (a fake tree with HIP 6.2) and that torch as installed."""
    import importlib.metadata
    import importlib.util

    import zluda_runner.doctor
    from tests.results import reports
    from zluda_runner import Options, list_results, run_doctor
    from zluda_runner.conduct.resolve import resolve_release
    from zluda_runner.core.settings import Settings

    require(importlib.util.find_spec("torch") is not None, "torch not installed (pip install torch==2.13.0)")
    torch = importlib.metadata.version("torch")  # the test environment's torch==2.13.0 (a CPU build)
    lib = tmp_path / "root/usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.6.2.41133").write_bytes(b"\x7fELF")  # as ROCm 6.2's package names it
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(tmp_path / "root"))
    monkeypatch.setattr(zluda_runner.doctor, "run_doctor", lambda options: reports.doctor_report())
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    run_doctor(options)
    chosen = resolve_release(Settings(cache_dir=tmp_path / "cache")).require()
    [run] = list_results(options)
    assert (run.release_id, run.release and run.release["asset"]) == (chosen.release.id, chosen.asset.name)
    assert run.target == {"torch_version": torch, "cuda_major": None}  # 7859508: no release, no target
