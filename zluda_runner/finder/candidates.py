"""What ``find`` tries, in order: the releases the one resolver finds fitting for this host and torch (its
ranked list, :attr:`zluda_runner.release.selection.Resolution.candidates`), each ``--candidate`` folder or
archive, a global ``--zluda-dir``; and for each, after its defaults ran and did not pass, the setting
variants that matter here (:func:`variants_for`), cheapest rejections first: the other HIP SDKs (ROCm
folders) of the host, one per version (a plan of its own, which costs no run where it is FATAL); pinned
memory off where the release lacks it (the manifest's data) and the defaults left it on; cuDNN off where
the defaults left it on, cuDNN on where they switched it off and the release serves cuDNN on a host with
MIOpen; on Windows, the release's injector where the plan places or preloads instead."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.settings import Settings
from zluda_runner.finder.model import Candidate
from zluda_runner.host.hipchoice import HipInstall
from zluda_runner.plan.defaults import CUDNN_OFF, PINNED_OFF, TORCH_DEFAULTS_ENV, DefaultsFacts
from zluda_runner.plan.model import ShimPlan
from zluda_runner.plan.windows import uses_injector
from zluda_runner.release.layout import launchers_of
from zluda_runner.release.lockfile import (
    CUDNN_OFF_VARIANT,
    CUDNN_ON_VARIANT,
    DEFAULTS,
    INJECTOR_VARIANT,
    OTHER_HIP_VARIANT,
    PINNED_OFF_VARIANT,
)


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
    settings = dataclasses.replace(settings, hip=cand.hip) if cand.hip else settings  # the other HIP
    if cand.source == "dir":
        return dataclasses.replace(settings, zluda_dir=Path(cand.ref), release=None, archive=None)
    if cand.source == "archive":
        return dataclasses.replace(settings, zluda_dir=None, release=None, archive=Path(cand.ref))
    return dataclasses.replace(settings, zluda_dir=None, archive=None, release=cand.ref)


def _startup_names(env: Mapping[str, str]) -> list[str]:
    return [n for n in env.get(TORCH_DEFAULTS_ENV, "").split(",") if n]


def variants_for(cand: Candidate, plan: ShimPlan, facts: DefaultsFacts,
                 other_hips: Sequence[HipInstall] = ()) -> list[Candidate]:
    """The variants of ``cand`` worth a run beside its defaults as applied, for this plan on this host, in
    the order tried (module doc): each other HIP of ``other_hips``; pinned memory off where the release
    lacks it and the defaults did not switch it off (``--no-defaults``, switched off by name, a launcher
    not inspected as Python); cuDNN the other way where it matters; on Windows the release's injector where
    the plan places or preloads instead (placement vs injector)."""
    names = [OTHER_HIP_VARIANT] * len(other_hips) + _setting_variants(plan, facts)
    hips = [h.path for h in other_hips] + [None] * (len(names) - len(other_hips))
    return [Candidate(cand.source, cand.ref, name, hip) for name, hip in zip(names, hips, strict=True)]


def _setting_variants(plan: ShimPlan, facts: DefaultsFacts) -> list[str]:
    out: list[str] = []
    pinned = next((d for d in plan.defaults if d.name == PINNED_OFF), None)
    if facts.unpinned and (not pinned.applied if pinned is not None else plan.target.python is None):
        out.append(PINNED_OFF_VARIANT)
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
    (:data:`TORCH_DEFAULTS_ENV`, what the start-up code applies) with cuDNN off or pinned memory off added,
    or cuDNN off taken out; the other HIP's change is in the run's settings, not here."""
    out = dict(env)
    names = _startup_names(env)
    added = {CUDNN_OFF_VARIANT: CUDNN_OFF, PINNED_OFF_VARIANT: PINNED_OFF}.get(variant)
    if added is not None and added not in names:
        names.append(added)
    elif variant == CUDNN_ON_VARIANT:
        names = [n for n in names if n != CUDNN_OFF]
    elif variant not in (DEFAULTS, INJECTOR_VARIANT, OTHER_HIP_VARIANT, *_ADDING):
        raise ValueError(f"unknown variant {variant!r}")
    # empty: no start-up default (the lock keeps the change as "")
    if names or variant not in _NO_STARTUP_CHANGE:
        out[TORCH_DEFAULTS_ENV] = ",".join(names)
    return out


_ADDING = (CUDNN_OFF_VARIANT, PINNED_OFF_VARIANT)
_NO_STARTUP_CHANGE = (DEFAULTS, INJECTOR_VARIANT, OTHER_HIP_VARIANT)  # their change is not the start-up list


def variant_changes(cand: Candidate, hip_words: str | None = None) -> dict[str, str]:
    """What ``cand``'s variant changes, in words, for the lock (empty for the defaults); ``hip_words``: the
    other HIP as the run read it (``ROCm 6.2.0 at /opt/rocm-6.2.0``)."""
    variant = cand.variant
    if variant == CUDNN_OFF_VARIANT:
        return {CUDNN_OFF: "torch.backends.cudnn.enabled = False (find's variant)"}
    if variant == PINNED_OFF_VARIANT:
        return {PINNED_OFF: "Tensor.pin_memory() returns the tensor unpinned; DataLoader(pin_memory=True) "
                "runs unpinned (find's variant: the release lacks pinned memory)"}
    if variant == OTHER_HIP_VARIANT:
        return {OTHER_HIP_VARIANT: f"{hip_words or cand.hip} instead of the host's own pick (find's variant)"}
    if variant == CUDNN_ON_VARIANT:
        return {CUDNN_OFF: "cuDNN left on (find's variant: the default switched off)"}
    if variant == INJECTOR_VARIANT:
        return {INJECTOR_VARIANT: "started through the release's zluda.exe, nothing placed (find's variant)"}
    return {}
