"""How well it works here: :func:`run_probe`, :func:`run_doctor`, and the results store
(:func:`record_result`, :func:`list_results`, :func:`get_result`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, to_settings

if TYPE_CHECKING:
    from zluda_runner.doctor.model import DoctorReport
    from zluda_runner.probe.model import ProbeReport
    from zluda_runner.results.schema import RunRecord


@dataclass(frozen=True)
class Recorded:
    """What :func:`record_result` did: ``recorded`` (with ``run_id``; ``duplicate`` when that run was already
    stored), or a ``warning`` saying why the store could not take it. ``location`` names the store."""

    recorded: bool
    run_id: str | None
    duplicate: bool
    warning: str | None
    location: str


def run_probe(
    options: Options | None = None,
    *,
    torch: bool = False,
    quick: bool = False,
    device: str = "cuda",
    libcuda: Path | str | None = None,
    cases: Sequence[str] = (),
    ops: Sequence[str] = (),
    dtypes: Sequence[str] | None = None,
    timeout: float | None = None,
    budget: float | None = None,
    native: bool = False,
) -> ProbeReport:
    """Which CUDA driver calls (or, with ``torch``, which torch ops) work here: pass, fail, missing,
    crashed or hung per case, each in a worker process a crash cannot take down.

    Args:
        torch: probe torch ops in ``options.python`` (default: this interpreter) under ZLUDA.
        quick: with ``torch``: the hand-written smoke ops instead of torch's OpInfo database.
        device: the torch device (``"cpu"`` compares CPU results with float64, without ZLUDA).
        libcuda: the driver to probe (default: the release's).
        cases: only these driver cases. ops: only these torch op ids (globs). dtypes: torch dtypes.
        timeout: seconds per case (torch: per op; ``quick``: the whole run). budget: stop after seconds.
        native: torch without ZLUDA (a baseline on NVIDIA or native ROCm).

    The report is recorded in the results store unless ``Options(record=False)``;
    ``report.could_not_run`` and ``report.has_problems`` are its verdicts.

    Raises:
        ProbeError: the probe could not run at all (no driver found).
    """
    from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES
    from zluda_runner.probe.session import ProbeRequest, run_requested_probe
    from zluda_runner.results.recording import record_for

    settings = to_settings(options)
    request = ProbeRequest(libcuda=None if libcuda is None else Path(libcuda), torch=torch, device=device,
                           native=native, quick=quick, ops=list(ops),
                           dtypes=list(DEFAULT_DTYPES if dtypes is None else dtypes), budget=budget,
                           timeout=timeout, case_ids=list(cases))
    with caller_errors():
        report = run_requested_probe(request, settings)
    kind = "torch-ops" if torch else "probe"
    record_for(kind, report, settings, ["probe", *(["--torch"] if torch else [])])
    return report


def run_doctor(options: Options | None = None, *, strict: bool = False,
               root: Path | str | None = None) -> DoctorReport:
    """Check this machine for ZLUDA: GPU, HIP/ROCm, driver, libraries, torch, releases, caches.

    Each of ``report.checks`` is ok, warn or fail with a concrete fix; ``report.exit_code`` is 0 when
    no check failed (``strict``: none warned either), else 3. Recorded unless ``Options(record=False)``.

    Args:
        root: read every host file under this folder instead of ``/`` (a copied or made-up system
            tree); the HIP runtime, host tools and torch are then not asked, and nothing is recorded
            (a made-up tree describes no real machine).
    """
    from zluda_runner.doctor import DoctorOptions, run_doctor
    from zluda_runner.results.recording import record_for

    settings = to_settings(options)
    with caller_errors():
        report = run_doctor(DoctorOptions(root=None if root is None else Path(root), settings=settings,
                                          strict=strict, python=settings.python))
    if root is None:
        record_for("doctor", report, settings, ["doctor"])
    return report


def record_result(kind: str, report: object, options: Options | None = None, *,
           command: Sequence[str] = ()) -> Recorded:
    """Keep one report in the results store (``Options(results_db=...)``, else ``results.db`` in the cache).

    Never raises for a store problem: it comes back as ``warning``.

    Args:
        kind: ``"probe"``, ``"torch-ops"``, ``"trace"``, ``"ab"``, ``"verify-load"`` or ``"doctor"``.
        report: the report (what :func:`run_probe` or :func:`run_doctor` returned).
        command: the command line that made it, as words (scrubbed of personal paths when stored).
    """
    from zluda_runner.host.quick import quick_facts
    from zluda_runner.results.recording import record_report

    outcome = record_report(kind, report, settings=to_settings(options), command=list(command),
                            host=quick_facts().fingerprint())
    return Recorded(outcome.recorded, outcome.run_id, outcome.duplicate,
                    outcome.warning and _worded(outcome.warning), outcome.location)


def list_results(options: Options | None = None, *, kind: str | None = None, gpu: str | None = None,
            since: str | None = None, limit: int | None = 50) -> list[RunRecord]:
    """The recorded runs, oldest first (without their items: :func:`get_result` has them).

    Args:
        kind: only runs of this kind. gpu: only runs on this GPU target (``"gfx1100"``).
        since: only runs started on or after this date (``YYYY-MM-DD``). limit: the latest N runs.

    Raises:
        ResultsStoreError: the store cannot be opened or read.
    """
    from zluda_runner.results.backends import open_store
    from zluda_runner.results.bundle import check_since

    with caller_errors():
        since_iso = check_since(since)
        store = open_store(to_settings(options))
        assert store is not None  # create=True always opens
        with store:
            return store.list_runs(kind=kind, gfx=gpu, since=since_iso, limit=limit)


def get_result(run_id: str, options: Options | None = None) -> RunRecord:
    """One recorded run with all its items (``run_id``: at least 4 hex digits of its id).

    Raises:
        ResultsStoreError: no such run, or the store cannot be read.
    """
    from zluda_runner.results.backends import open_store

    with caller_errors():
        store = open_store(to_settings(options))
        assert store is not None
        with store:
            return store.get_run(run_id)


def _worded(text: str) -> str:
    from zluda_runner.api.options import for_caller

    return for_caller(text)
