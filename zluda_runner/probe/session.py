"""``zluda-run probe``: which driver (or which torch ops) to probe, under which environment.

The driver probe takes ``--libcuda``, else ZLUDA's driver from ``--zluda-dir`` (not its ``trace/``
copy), else the driver of the manifest release that fits this host (``libcuda.so.1``; on Windows
the release's ``nvcuda.dll``). The torch-level probe runs in
the target interpreter under the planned launch (``--native``/``--device cpu``: as it is), over
PyTorch's own OpInfo database, or the hand-written smoke set with ``quick``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core.errors import ProbeError
from zluda_runner.core.settings import Settings
from zluda_runner.probe.model import CaseResult, ProbeReport
from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES, DEFAULT_OP_TIMEOUT, run_opinfo_probe
from zluda_runner.probe.runner import DEFAULT_TIMEOUT, DRIVER_NAME, DRIVER_NAMES, run_probe
from zluda_runner.probe.torch_probe import DEFAULT_TORCH_TIMEOUT, run_torch_probe

if TYPE_CHECKING:
    from zluda_runner.plan.model import RecordRefs

LIBCUDA_NAMES = DRIVER_NAMES  # this platform's: nvcuda.dll on Windows, libcuda.so.1 elsewhere


@dataclass(frozen=True)
class ProbeRequest:
    """Which probe to run: the driver's cases (``case_ids``, all when empty), or the torch ops."""

    libcuda: Path | None = None
    torch: bool = False
    device: str = "cuda"
    native: bool = False
    quick: bool = False
    ops: Sequence[str] = ()
    dtypes: Sequence[str] = DEFAULT_DTYPES
    budget: float | None = None
    samples: int = 1
    timeout: float | None = None
    case_ids: Sequence[str] = ()

    @property
    def planned(self) -> bool:
        """The probe runs under the release ``zluda-run`` plans: not a driver given by path, not torch as it
        is (``native``, on the CPU)."""
        return self.libcuda is None if not self.torch else not (self.native or self.device == "cpu")


def find_probe_libcuda(settings: Settings, *, trust_on_first_use: bool = False) -> Path:
    """ZLUDA's driver: from ``--zluda-dir`` (its ``trace/`` copy's parent), else the fitting release."""
    if settings.zluda_dir is not None and settings.zluda_dir.name in ("trace", "trace_nvidia"):
        parent = settings.zluda_dir.parent
        for name in LIBCUDA_NAMES:
            if (parent / name).is_file():
                return parent / name
    from zluda_runner.conduct.context import run_context
    from zluda_runner.conduct.resolve import release_for, resolved
    from zluda_runner.release.selection import host_os

    ctx = resolved(run_context((), settings), os_name=host_os() or sys.platform, cuda=None)
    source = release_for(ctx, trust_on_first_use=trust_on_first_use)
    windows = sys.platform == "win32"
    drivers = [s for s in source.layout.for_family("driver") if s.path.lower().endswith(".dll") == windows]
    drivers.sort(key=lambda s: Path(s.path).name.lower() not in LIBCUDA_NAMES)  # nvcuda.dll before nvcuda64
    if not drivers:
        kind = "Windows" if windows else "Linux"
        raise ProbeError(f"no {DRIVER_NAME} in {source.layout.root}",
                         hint=f"point {{opt:zluda_dir}} at an unpacked {kind} ZLUDA, "
                         "or pass {opt:libcuda PATH}")
    return Path(drivers[0].path)


def zluda_env_for(python: str, settings: Settings, *,
                  trust_on_first_use: bool = False) -> tuple[dict[str, str], RecordRefs]:
    """The environment ``zluda-run`` gives ``python`` (the plan's loader set-up; refused if fatal), and
    what a recording of the run names, from the same run context."""
    from zluda_runner.conduct.context import run_context
    from zluda_runner.conduct.plan import plan_run
    from zluda_runner.conduct.refs import context_refs
    from zluda_runner.launch.prepare import launch_env, refuse_if_fatal

    ctx = plan_run(run_context([python], settings), trust_on_first_use=trust_on_first_use)
    assert ctx.plan is not None  # plan_run plans
    refuse_if_fatal(ctx.plan, settings.force)
    return launch_env(ctx.plan, settings.cache_dir), context_refs(ctx)


def run_requested_probe(request: ProbeRequest, settings: Settings,
                        progress: Callable[[CaseResult], None] | None = None
                        ) -> tuple[ProbeReport, RecordRefs | None]:
    """The report, and what its recording names where the probe planned its run here (the torch probe
    under ZLUDA; else None: the recording works it out)."""
    if not request.torch:
        libcuda = request.libcuda or find_probe_libcuda(settings)
        return run_probe(libcuda.absolute(), timeout=request.timeout or DEFAULT_TIMEOUT,
                         case_ids=request.case_ids or None, progress=progress), None
    python = settings.python or sys.executable
    env, refs = zluda_env_for(python, settings) if request.planned else (dict(os.environ), None)
    if request.quick:
        return run_torch_probe(python, env, device=request.device,
                               timeout=request.timeout or DEFAULT_TORCH_TIMEOUT), refs
    return run_opinfo_probe(python, env, device=request.device, dtypes=request.dtypes, ops=request.ops,
                            samples=request.samples, budget=request.budget,
                            op_timeout=request.timeout or DEFAULT_OP_TIMEOUT, progress=progress), refs
