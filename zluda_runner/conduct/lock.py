"""A run under a lock (``--lock FILE``): the lock's release taken, nothing chosen again, and the host
and files checked against what was locked. The lock's records and reader:
:mod:`zluda_runner.release.lockfile`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core.errors import LockDriftError, UsageFault
from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.release.lockfile import INJECTOR_VARIANT, Lock, LockedHost, changed_files

if TYPE_CHECKING:
    from zluda_runner.core.settings import Settings
    from zluda_runner.host.quick import QuickFacts
    from zluda_runner.plan.model import ShimPlan


def launch_mechanism(plan: ShimPlan, variant: str) -> str:
    """How the release reaches the workload, as the lock keeps it: the plan's bindings' mechanisms, or
    ``injector`` for the variant started through the release's zluda.exe."""
    if variant == INJECTOR_VARIANT:
        return "injector"
    return ", ".join(sorted({b.mechanism for b in plan.bindings if b.mechanism})) or "none"


def host_facts(plan: ShimPlan, quick: QuickFacts) -> LockedHost:
    """The host as a lock keeps it: the plan's OS and torch, the GPU, driver and HIP of the quick facts."""
    return LockedHost(os=plan.os, gpu_name=quick.gpu_name, gfx=quick.gfx, driver=quick.driver_version,
                      hip_version=quick.hip.version, hip_from=quick.hip.text, torch=plan.target.torch,
                      torch_cuda=plan.target.cuda, hip_path=quick.hip.path)


def locked_settings(settings: Settings, lock: Lock, env: Mapping[str, str]) -> Settings:
    """``settings`` taking the lock's release (its folder, its archive, or its manifest id) and the HIP it
    was proven with (its folder, where it is still there on this OS; else the host's own HIP, which the
    host check names as a difference): nothing is chosen again. ``--lock`` excludes ``--zluda-dir``,
    ``--release`` and ``--archive``; ``env``: the environment the run starts from (a fake host tree)."""
    pinned = (("{opt:zluda_dir}", settings.zluda_dir), ("{opt:release}", settings.release),
              ("{opt:archive}", settings.archive))
    given = [said for said, value in pinned if value]
    if given:
        raise UsageFault("{opt:lock FILE} and " + given[0] + " exclude each other: the lock names the "
                         "release", hint="drop one of them")
    from zluda_runner.release.selection import host_os

    hip = lock.host.hip_path
    if hip and host_os() == lock.host.os \
            and HostFs(root_from_env(env.get(ROOT_ENV) or "")).is_dir(hip):
        settings = dataclasses.replace(settings, hip=hip)
    rel = lock.release
    if rel.source == "dir":
        return dataclasses.replace(settings, zluda_dir=Path(rel.root or rel.ref))
    if rel.source == "archive":
        return dataclasses.replace(settings, archive=Path(rel.ref), release=rel.id)
    return dataclasses.replace(settings, release=rel.id or rel.ref)


_CHANGE_WORDS = {"missing": "missing", "sha256": "its SHA-256 changed", "link": "the link points elsewhere"}
_FIELD_WORDS = {"gfx": "GPU", "gpu_name": "GPU name", "hip_version": "HIP", "hip_path": "HIP folder",
                "torch": "torch",
                "torch_cuda": "torch's CUDA", "os": "OS"}


def check_locked_plan(lock: Lock, plan: ShimPlan, quick: QuickFacts, *, source: str,
                      strict: bool) -> list[str]:
    """A run under ``lock`` (read from ``source``), planned: a locked file that changed is exit 3 naming
    it; another GPU, HIP or torch is a warning naming each difference (``strict``: exit 3), and so is
    another mechanism. The warnings."""
    root = Path(plan.release.root) if plan.release is not None else None
    if root is None:
        raise LockDriftError(f"the plan has no release to check against the lock {source}",
                             hint="run with the lock's release: {cmd:find -- CMD} writes one")
    changed = changed_files(lock.release, root)
    if changed:
        raise LockDriftError(f"the release the lock {source} pins is not as locked: "
                             + "; ".join(f"{path}: {_CHANGE_WORDS[what]}" for path, what in changed),
                             hint="restore those files, or search again with {cmd:find -- CMD}",
                             details={"changed": [{"path": path, "change": what} for path, what in changed]})
    warnings = []
    differences = lock.host.differences(host_facts(plan, quick))
    if differences:
        said = f"this host is not the one the lock {source} was proven on: " + "; ".join(
            f"{_FIELD_WORDS[name]}: {mine or 'unknown'} when locked, {theirs or 'unknown'} here"
            for name, mine, theirs in differences)
        if strict:
            raise LockDriftError(said, hint="without {opt:strict} the run goes on with a warning; or search "
                                 "again on this host with {cmd:find -- CMD}",
                                 details={"differences": [{"field": name, "locked": mine, "here": theirs}
                                                          for name, mine, theirs in differences]})
        warnings.append(said)
    mechanism = launch_mechanism(plan, lock.variant)
    if mechanism != lock.mechanism:
        warnings.append(f"the lock {source} was proven with {lock.mechanism}; this plan binds with "
                        f"{mechanism}")
    return warnings
