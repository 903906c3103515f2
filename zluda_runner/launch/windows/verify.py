"""``--verify-load`` on Windows: which file each planned DLL was loaded from, told by the process itself.

Windows has no ``LD_DEBUG``. The workload's own process says what it loaded: zluda-run's start-up code
(:mod:`zluda_runner.launch.windows.preload`, reaching the interpreter through the plan's start-up hook)
registers an ``atexit`` handler that lists every module of the process (``EnumProcessModules``,
``GetModuleFileNameW``) into ``modules-<pid>.json`` in a folder named by ``ZLUDA_RUNNER_MODULES_DIR``;
each Python process of the run (multiprocessing workers too) writes its own.

A planned binding is **taken** when every module of the process loaded under its name is ZLUDA's file:
the release's file itself (preloaded by full path), or a copy with the same bytes (placed into
torch/lib). A module of that name with other bytes (NVIDIA's driver from System32, a copy of
torch's original) is **not taken**: the verification fails (exit 3). No listing at all (the
interpreter ran nothing of ours, or the process ended without its exit handlers) proves nothing:
every binding is **unproven**, and that fails too. Ctrl-C keeps the workload's exit (130).

The expectations travel from :func:`zluda_runner.launch.run.prepare_run` in ``ZLUDA_RUNNER_VERIFY``
(taken out of the workload's environment before it starts).
"""

from __future__ import annotations

import hashlib
import json
import ntpath
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zluda_runner.plan.model import REPLACE, ShimPlan

PLANNED_ENV = "ZLUDA_RUNNER_VERIFY"
EVIDENCE = "module list"


def planned_bindings(plan: ShimPlan) -> dict[str, str]:
    """Needed name -> the release's file that must serve it (the placed copy has its bytes)."""
    return {b.need: b.shim for b in plan.bindings if b.action == REPLACE and b.shim}


def verify_setup(plan: ShimPlan, *, hook_written: str | None) -> tuple[dict[str, str], str]:
    """The variables a verified Windows run carries: the folder the listings go to, the expectations.
    The folder is created here and removed by :func:`verify_windows`."""
    from zluda_runner.launch.windows.preload import MODULES_ENV

    folder = tempfile.mkdtemp(prefix="zluda-runner-modules-")
    hook = plan.startup_hook
    if hook is None:
        no_listing = ("nothing of zluda-run's runs inside this workload at start-up (not a Python, or one "
                      "that reads no start-up code: see the plan), so no module list can be taken from "
                      "inside it")
    else:
        where = hook_written or ("a sitecustomize on a private PYTHONPATH" if hook.kind == "sitecustomize"
                                 else hook.folder or "?")
        no_listing = (f"the workload wrote no module list: zluda-run's start-up code ({where}) did not run "
                      "in it (not a Python program?), or it ended without running its exit handlers "
                      "(os._exit, a crash, killed)")
    planned = {"bindings": planned_bindings(plan), "no_listing": no_listing}
    return {MODULES_ENV: folder, PLANNED_ENV: json.dumps(planned)}, folder


def read_listings(folder: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(Path(folder).glob("modules-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _sha(path: str, cache: dict[str, str | None]) -> str | None:
    if path not in cache:
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            cache[path] = digest.hexdigest()
        except OSError:
            cache[path] = None
    return cache[path]


def _same(a: str, b: str) -> bool:
    return ntpath.normcase(os.path.abspath(a)) == ntpath.normcase(os.path.abspath(b))


def evidence_from_listings(listings: Sequence[Mapping[str, Any]], planned: Mapping[str, str]) -> list[Any]:
    """One :class:`~zluda_runner.launch.verdict.BindingEvidence` per planned name, from the listings."""
    from zluda_runner.launch.verdict import BindingEvidence

    hashes: dict[str, str | None] = {}
    result = []
    for name, shim in planned.items():
        want = _sha(shim, hashes)
        lines: list[str] = []
        pids: list[int] = []
        wrong: list[str] = []
        ours: list[str] = []
        for listing in listings:
            pid = int(listing.get("pid") or 0)
            for path, code in listing.get("preload_failed") or []:
                if ntpath.basename(str(path)).lower() == name.lower():
                    lines.append(f"pid {pid}: preload of {path} failed (Windows error {code})")
            for module in listing.get("modules") or []:
                module = str(module)
                if ntpath.basename(module).lower() != name.lower():
                    continue
                if _same(module, shim) or (want is not None and _sha(module, hashes) == want):
                    ours.append(module)
                    lines.append(f"pid {pid}: {module} (ZLUDA's: the bytes of {shim})")
                    if pid not in pids:
                        pids.append(pid)
                else:
                    wrong.append(module)
                    lines.append(f"pid {pid}: {module} (NOT ZLUDA's {Path(shim).name}: other bytes)")
        actual = Path(wrong[0]) if wrong else (Path(ours[0]) if ours else None)
        result.append(BindingEvidence(name, Path(shim), actual, bool(ours) and not wrong,
                                      list(dict.fromkeys(lines)), pids))
    return result


def verify_windows(argv: Sequence[str], env: Mapping[str, str], planned_text: str, *,
                   timeout: float | None = None) -> Any:
    """Run ``argv`` (stdio inherited, untouched) and judge every planned binding by the modules each
    process of the run listed at exit."""
    from zluda_runner.launch.process import run_process
    from zluda_runner.launch.verdict import VerifyResult
    from zluda_runner.launch.windows.preload import MODULES_ENV

    planned = json.loads(planned_text)
    run_env = {k: v for k, v in env.items() if k != PLANNED_ENV}
    folder = run_env.get(MODULES_ENV) or tempfile.mkdtemp(prefix="zluda-runner-modules-")
    run_env[MODULES_ENV] = folder
    try:
        exit_code = run_process(argv, run_env, timeout=timeout)
        listings = read_listings(Path(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = VerifyResult(exit_code, evidence_from_listings(listings, planned["bindings"]), evidence=EVIDENCE)
    if not listings:
        result.unproven = str(planned.get("no_listing") or "the workload wrote no module list")
    result.processes = len(listings)
    return result
