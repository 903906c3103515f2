"""The public API launchers embed (SD.Next, ComfyUI-Zluda, StabilityMatrix): every name here is
re-exported by :mod:`zluda_runner` and listed in its ``__all__``; docs/api.md states the promise.

One options record (:class:`Options`) for every call; errors are the
:class:`~zluda_runner.core.errors.ZludaRunnerError` family, with hints worded for a Python caller.
The stages are imported by each call, not here: ``import zluda_runner`` stays cheap.
"""

from __future__ import annotations

from zluda_runner.api.checking import Recorded, get_result, list_results, record_result, run_doctor, run_probe
from zluda_runner.api.launching import Launch, inspect, plan_command, prepare_launch, run
from zluda_runner.api.options import Options
from zluda_runner.api.placing import Placed, place, placed, placement_status, restore
from zluda_runner.api.releases import Rejected, ReleaseChoice, cached_release, choose_release, fetch

__all__ = [
    "Launch",
    "Options",
    "Placed",
    "Recorded",
    "Rejected",
    "ReleaseChoice",
    "cached_release",
    "choose_release",
    "fetch",
    "get_result",
    "inspect",
    "list_results",
    "place",
    "placed",
    "placement_status",
    "plan_command",
    "prepare_launch",
    "record_result",
    "restore",
    "run",
    "run_doctor",
    "run_probe",
]
