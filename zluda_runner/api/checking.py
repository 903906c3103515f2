"""How well it works here: :func:`run_probe` and :func:`run_doctor` (the results store is
:mod:`zluda_runner.api.store`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, keep, recorded, to_settings, worded
from zluda_runner.core.argcheck import Count, Seconds, checked

if TYPE_CHECKING:
    from zluda_runner.doctor.model import DoctorReport
    from zluda_runner.probe.model import CaseResult, ProbeReport


@checked
@recorded
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
    timeout: Seconds | None = None,
    budget: Seconds | None = None,
    native: bool = False,
    samples: Count = 1,
    progress: Callable[[CaseResult], None] | None = None,
    command: Sequence[str] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ProbeReport:
    """Which CUDA driver calls (or, with ``torch``, which torch ops) work here: pass, fail, missing,
    crashed or hung per case, each in a worker process a crash cannot take down.

    Args:
        torch: probe torch ops in ``options.python`` (default: this interpreter) under ZLUDA.
        quick: with ``torch``: the hand-written smoke ops instead of torch's OpInfo database.
        device: the torch device (``"cpu"`` compares CPU results with float64, without ZLUDA).
        libcuda: the driver to probe (default: the release's); the cuBLAS beside it (a release's) is
            probed by the ``cublas.*`` cases, skipped where there is none.
        cases: only these driver cases. ops: only these torch op ids (globs). dtypes: torch dtypes.
        timeout: seconds per case (torch: per op; ``quick``: the whole run). budget: stop after seconds.
        native: torch without ZLUDA (a baseline on NVIDIA or native ROCm).
        samples: with ``torch``: samples per op.
        progress: hears each case as it finishes.
        command: the command line recorded with the report (default: this call and its arguments).
        on_warning: hears a results-store problem (the report was not recorded).

    The report is recorded in the results store unless ``Options(record=False)``;
    ``report.could_not_run`` and ``report.has_problems`` are its verdicts.

    Raises:
        ProbeError: the probe could not run at all (no driver found).
    """
    from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES
    from zluda_runner.probe.session import ProbeRequest, run_requested_probe

    settings = to_settings(options)
    request = ProbeRequest(libcuda=None if libcuda is None else Path(libcuda), torch=torch, device=device,
                           native=native, quick=quick, ops=list(ops),
                           dtypes=list(DEFAULT_DTYPES if dtypes is None else dtypes), budget=budget,
                           samples=samples, timeout=timeout, case_ids=list(cases))
    with caller_errors():
        report, refs = run_requested_probe(request, settings, progress=progress)
    keep("torch-ops" if torch else "probe", report, settings, command, on_warning=on_warning, refs=refs,
         planned=request.planned)
    return report


@checked
@recorded
def run_doctor(options: Options | None = None, *, strict: bool = False,
               root: Path | str | None = None,
               on_warning: Callable[[str], None] | None = None) -> DoctorReport:
    """Check this machine for ZLUDA: GPU, HIP/ROCm, driver, libraries, torch, releases, caches.

    Each of ``report.checks`` is ok, warn or fail with a concrete fix; ``report.exit_code`` is 0 when
    no check failed (``strict``: none warned either), else 3. Recorded unless ``Options(record=False)``.

    Args:
        root: read every host file under this folder instead of ``/`` (a copied or made-up system
            tree); the HIP runtime, host tools and torch are then not asked, and nothing is recorded
            (a made-up tree describes no real machine). Default: the host as a run reads it
            (``ZLUDA_RUNNER_ROOT``'s tree where that names one, as for every host reader), recorded.
        on_warning: hears a results-store problem (the report was not recorded).

    Raises:
        HostError: ``root`` is not a folder.
    """
    from zluda_runner.doctor import DoctorOptions, run_doctor
    from zluda_runner.host.fs import root_from_env

    settings = to_settings(options)
    with caller_errors():
        fake_root = root_from_env(None if root is None else str(root))  # None: ZLUDA_RUNNER_ROOT's
        report = run_doctor(DoctorOptions(root=fake_root, settings=settings, strict=strict))
    report = _worded_report(report)
    if root is None:
        keep("doctor", report, settings, on_warning=on_warning)
    return report


def _worded_report(report: DoctorReport) -> DoctorReport:
    """``report`` with each check's message and fix worded for the caller (the doctor writes an
    option or an action in the neutral markup of :mod:`zluda_runner.core.wording`)."""
    import dataclasses

    checks = tuple(dataclasses.replace(c, message=worded(c.message), fix=worded(c.fix) if c.fix else c.fix)
                   for c in report.checks)
    return dataclasses.replace(report, checks=checks)
