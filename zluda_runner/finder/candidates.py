"""What ``find`` tries, in order: the releases the one resolver finds fitting for this host and torch (its
ranked list, :attr:`zluda_runner.release.selection.Resolution.candidates`), each ``--candidate`` folder or
archive, a global ``--zluda-dir``; and for each, after its defaults were planned, the setting variants
that matter here (:func:`variants_for`): cuDNN off where the defaults left it on, cuDNN on where they
switched it off and the release serves cuDNN on a host with MIOpen; on Windows, the release's injector
where the plan places or preloads instead."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.settings import Settings
from zluda_runner.finder.model import Candidate
from zluda_runner.plan.defaults import CUDNN_OFF, TORCH_DEFAULTS_ENV, DefaultsFacts
from zluda_runner.plan.model import ShimPlan
from zluda_runner.plan.windows import uses_injector
from zluda_runner.release.layout import launchers_of
from zluda_runner.release.lockfile import CUDNN_OFF_VARIANT, CUDNN_ON_VARIANT, DEFAULTS, INJECTOR_VARIANT


def given_candidates(given: Sequence[Path], settings: Settings) -> list[Candidate]:
    """Each ``--candidate`` (a folder, or an archive file), then a global ``--zluda-dir``, once each."""
    out: list[Candidate] = []
    paths = [*given, *([settings.zluda_dir] if settings.zluda_dir else [])]
    for path in paths:
        path = path.expanduser().absolute()
        cand = Candidate("archive" if path.is_file() else "dir", str(path))
        if cand not in out:
            out.append(cand)
    return out


def manifest_candidates(resolution_ids: Sequence[str]) -> list[Candidate]:
    return [Candidate("manifest", rid) for rid in dict.fromkeys(resolution_ids)]


def candidate_settings(settings: Settings, cand: Candidate) -> Settings:
    """The settings a run of ``cand`` takes: that folder, that archive, or that manifest release."""
    if cand.source == "dir":
        return dataclasses.replace(settings, zluda_dir=Path(cand.ref), release=None, archive=None)
    if cand.source == "archive":
        return dataclasses.replace(settings, zluda_dir=None, release=None, archive=Path(cand.ref))
    return dataclasses.replace(settings, zluda_dir=None, archive=None, release=cand.ref)


def _startup_names(env: Mapping[str, str]) -> list[str]:
    return [n for n in env.get(TORCH_DEFAULTS_ENV, "").split(",") if n]


def variants_for(plan: ShimPlan, facts: DefaultsFacts) -> list[str]:
    """The variants worth a run beside the defaults as applied, for this plan on this host: cuDNN the
    other way where it matters, and on Windows the release's injector where the plan places or preloads
    instead (placement vs injector)."""
    out: list[str] = []
    cudnn = next((d for d in plan.defaults if d.name == CUDNN_OFF), None)
    if cudnn is not None and cudnn.applied:
        if facts.miopen and "cudnn" in facts.served:
            out.append(CUDNN_ON_VARIANT)
    # a torch workload, or one not inspected as Python (a launcher that runs one): cuDNN off may help
    elif plan.target.torch is not None or plan.target.python is None:
        out.append(CUDNN_OFF_VARIANT)
    if plan.os == "windows" and plan.release is not None and not uses_injector(plan) \
            and "injector" in launchers_of(Path(plan.release.root)):
        out.append(INJECTOR_VARIANT)
    return out


def variant_env(env: Mapping[str, str], variant: str) -> dict[str, str]:
    """The launch environment ``env`` with ``variant``'s change: the start-up defaults' list
    (:data:`TORCH_DEFAULTS_ENV`, what the start-up code applies) with cuDNN off added or taken out."""
    out = dict(env)
    names = _startup_names(env)
    if variant == CUDNN_OFF_VARIANT and CUDNN_OFF not in names:
        names.append(CUDNN_OFF)
    elif variant == CUDNN_ON_VARIANT:
        names = [n for n in names if n != CUDNN_OFF]
    elif variant not in (DEFAULTS, INJECTOR_VARIANT):
        raise ValueError(f"unknown variant {variant!r}")
    # empty: no start-up default (the lock keeps the change as "")
    if names or variant not in (DEFAULTS, INJECTOR_VARIANT):
        out[TORCH_DEFAULTS_ENV] = ",".join(names)
    return out


def variant_changes(variant: str) -> dict[str, str]:
    """What ``variant`` changes, in words, for the lock (empty for the defaults)."""
    if variant == CUDNN_OFF_VARIANT:
        return {CUDNN_OFF: "torch.backends.cudnn.enabled = False (find's variant)"}
    if variant == CUDNN_ON_VARIANT:
        return {CUDNN_OFF: "cuDNN left on (find's variant: the default switched off)"}
    if variant == INJECTOR_VARIANT:
        return {INJECTOR_VARIANT: "started through the release's zluda.exe, nothing placed (find's variant)"}
    return {}
