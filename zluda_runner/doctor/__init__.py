"""``zluda-run doctor``: what this machine has (GPU, HIP/ROCm, driver, libraries) and what to fix.

The facts come from :mod:`zluda_runner.host` (discovery only, no verdicts); this package
judges them: :mod:`.model` (options, checks, report), ``checks_*`` (one module per area),
:mod:`.run` (:func:`run_doctor` and the exit code), :mod:`.view` (text).  Nothing on the
launch path imports it.
"""

from __future__ import annotations

from zluda_runner.doctor.model import Check, DoctorOptions, DoctorReport, Status
from zluda_runner.doctor.run import run_doctor

__all__ = ["Check", "DoctorOptions", "DoctorReport", "Status", "run_doctor"]
