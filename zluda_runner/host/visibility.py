"""Which of the host's AMD GPUs the workload sees, by the user's ``ROCR_VISIBLE_DEVICES`` /
``HIP_VISIBLE_DEVICES`` / ``CUDA_VISIBLE_DEVICES`` read as ROCm reads them; what is wrong with a value
that leaves the workload no GPU, or that zluda-run cannot follow.

Pure (standard library only): the host's GPUs are given as a count in HIP's order (the KFD topology's),
None where that order is not known (the Windows registry). ROCm's own rules, which this follows:

- ``ROCR_VISIBLE_DEVICES`` (the ROCm runtime, ROCr; Linux): set, even empty, it filters the GPUs first;
  an empty value shows none. Each comma-separated entry (blanks trimmed) is an index (``strtol``, base
  0) or a ``GPU-…`` UUID prefix; the first entry that is neither, names no GPU, or repeats one ends the
  list: it and every entry after it show nothing. (ROCm/ROCR-Runtime
  src/core/runtime/amd_filter_device.cpp, ``RvdFilter::BuildRvdTokenList``/``BuildUsrDeviceList``.)
- ``HIP_VISIBLE_DEVICES``, or ``CUDA_VISIBLE_DEVICES`` where HIP's is unset or empty (HIP; ROCclr):
  unset or empty: every GPU. Each entry is a plain decimal index (``str(atoi(entry)) == entry``: no sign,
  no blank, no leading zero) among the GPUs ROCr left, or a ``GPU-…`` UUID; the first other entry
  (``-1``, ``abc``, an index past the last GPU) ends the list: it and everything after it are hidden, so
  ``-1`` hides every GPU, as CUDA documents for ``CUDA_VISIBLE_DEVICES``. A repeated index is skipped.
  (ROCm/clr rocclr/device/rocm/rocdevice.cpp, ``Device::init``: "Exit the loop as anything to the
  right of invalid deviceId has to be discarded".)

The host's GPU UUIDs are not read here: a ``GPU-…`` entry makes the result unknown (``visible`` None),
and the warning says so rather than guess a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

ROCR, HIP, CUDA = "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"
SRC_ROCR = "ROCm/ROCR-Runtime src/core/runtime/amd_filter_device.cpp (RvdFilter::BuildUsrDeviceList)"
SRC_HIP = "ROCm/clr rocclr/device/rocm/rocdevice.cpp (Device::init)"
MAX_VALUE = 4096  # characters of a variable looked at: a longer value is cut there (entries past it are not)
_DECIMAL = re.compile(r"0|[1-9][0-9]*")  # what ROCclr takes as an index: str(atoi(entry)) == entry
_STRTOL = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")  # strtol(..., 0) read whole
FIX = "unset it, or give device indices that exist (0 is the first GPU; the doctor lists them in HIP's order)"


@dataclass(frozen=True)
class Visibility:
    """What the user's variables leave the workload: ``visible``, the indices (into the host's GPUs, in
    HIP's order) of the GPUs it sees, device 0 first; None where that is not known (a UUID entry, or the
    host's GPU count unknown and the list not read to its end). ``chosen``: whether any of the variables
    chooses at all (set and not empty, or ``ROCR_VISIBLE_DEVICES`` set empty). ``warnings``: each names
    the variable and its value."""

    visible: tuple[int, ...] | None
    chosen: bool
    warnings: tuple[str, ...] = ()

    @property
    def none_visible(self) -> bool:
        return self.visible == ()


def _shown(var: str, value: str) -> str:
    return f"{var}={value!r}" if len(value) <= 80 else f"{var}={value[:77]!r}..."


def _strtol(token: str) -> int | None:
    if not _STRTOL.fullmatch(token):
        return None
    sign = -1 if token.startswith("-") else 1
    body = token.lstrip("+-")
    if body[:2] in ("0x", "0X"):
        return sign * int(body[2:], 16)
    return sign * int(body, 8 if body.startswith("0") and len(body) > 1 else 10)


def _entries(value: str) -> list[str]:
    """The comma-separated entries as both runtimes walk them: a trailing comma ends the list."""
    parts = value[:MAX_VALUE].split(",")
    return parts[:-1] if parts and parts[-1] == "" and len(parts) > 1 else parts


UUID = "uuid"  # a cut reason: a UUID entry, which zluda-run does not match to a GPU


def _rocr(value: str, count: int | None) -> tuple[list[int], str | None]:
    """ROCr's filter: (the indices kept, in order; why the list ended early, or None). ``count`` None:
    indices are taken as they are (not checked against the host's GPUs)."""
    if value == "":
        return [], "an empty value shows no GPU"
    kept: list[int] = []
    for token in (t.strip().upper() for t in _entries(value)):
        if count is not None and len(kept) >= count:
            break  # ROCr reads no more entries than there are GPUs
        if token.startswith("G"):
            return kept, UUID
        index = _strtol(token)
        if index is None:
            return kept, f"{repr(token) if token else 'an empty entry'} is not a device index or UUID"
        if index < 0 or (count is not None and index >= count):
            return kept, f"{index} names no GPU" + (f" (this host has {count})" if count is not None else "")
        if index in kept:
            return kept, f"{index} is named twice (a repeat ends the list)"
        kept.append(index)
    return kept, None


def _hip(value: str, count: int | None, filtered: bool) -> tuple[list[int], str | None]:
    """HIP's pick among ``count`` GPUs: (the positions kept, in order; why the list ended early, or None)."""
    kept: list[int] = []
    for entry in _entries(value):
        if "GPU-" in entry:
            return kept, UUID
        if not _DECIMAL.fullmatch(entry):
            shown = repr(entry) if entry else "an empty entry"
            return kept, f"{shown} is not a device index (a plain number, 0 the first GPU)"
        index = int(entry)
        if count is not None and index >= count:
            of = f"{ROCR} leaves {count}" if filtered else f"this host has {count}"
            return kept, f"{index} names no GPU ({of})"
        if index not in kept:
            kept.append(index)
    return kept, None


def gpu_visibility(env: Mapping[str, str], count: int | None) -> Visibility:
    """What ``env`` (the workload's environment) leaves visible of ``count`` GPUs in HIP's order (None:
    the count or order is not known: then only what holds on any host is said), by ROCm's rules (module
    doc)."""
    rocr = env.get(ROCR)
    hip_var = HIP if env.get(HIP) else CUDA
    hip = env.get(hip_var) or None
    if rocr is None and hip is None:
        return Visibility(None if count is None else tuple(range(count)), False)
    warnings: list[str] = []
    known = count is not None
    pool = list(range(count)) if count is not None else []
    for var, value in ((ROCR, rocr), (hip_var, hip)):
        if value is None or (known and not pool):
            continue
        if var == ROCR:
            kept, cut = _rocr(value, count)
            picked = kept
        else:
            kept, cut = _hip(value, len(pool) if known else None, rocr is not None)
            picked = [pool[p] for p in kept] if known else kept
        if cut == UUID:
            warnings.append(f"{_shown(var, value)}: names a GPU by its UUID, which zluda-run does not match "
                            "to this host's GPUs: what it judges for the run (the release's GPU rules, the "
                            "doctor's checks) leaves the GPU out")
            known, pool = False, picked
            if picked:
                break
            continue
        if cut is not None:
            warnings.append(_ended(var, value, cut, picked if known else None if picked else [],
                                   SRC_ROCR if var == ROCR else SRC_HIP))
        if not picked and cut is not None:
            return Visibility((), True, tuple(warnings))
        pool = picked
    return Visibility(tuple(pool) if known else None, True, tuple(warnings))


def _ended(var: str, value: str, cut: str, kept: list[int] | None, source: str) -> str:
    """The warning for a list ROCm ends early; ``kept``: the GPUs left (None: those named before it)."""
    if kept is None:
        left = "the workload sees only the GPUs named before it"
    elif kept:
        left = f"the workload sees GPU {', '.join(map(str, kept))} only"
    else:
        left = "the workload sees no GPU: torch falls back to the CPU, or fails"
    how = "" if value == "" else "ROCm hides that entry and every one after it, so "
    return f"{_shown(var, value)}: {cut}; {how}{left} (ROCm's rule: {source}): {FIX}"


T = TypeVar("T")


def workload_target(gpus: Sequence[T], env: Mapping[str, str]) -> tuple[T | None, Visibility]:
    """The GPU of ``gpus`` (in HIP's order) the workload gets as device 0 under ``env``, and what the
    user's variables leave (:func:`gpu_visibility`); None when they hide every GPU or cannot be
    followed (``visibility.visible`` tells which: ``()`` or None)."""
    vis = gpu_visibility(env, len(gpus))
    if not vis.chosen:
        return (gpus[0] if gpus else None), vis
    return (gpus[vis.visible[0]] if vis.visible else None), vis


def restated_env(env: Mapping[str, str], count: int) -> dict[str, str]:
    """``env`` with the user's choice of GPU among ``count`` (in HIP's order) written the one plain way
    every reader of it understands: ``HIP_VISIBLE_DEVICES`` the indices HIP shows, device 0 first, and
    no ``ROCR_VISIBLE_DEVICES`` / ``CUDA_VISIBLE_DEVICES``; where no GPU is visible, or which one is not
    known, the index past the last GPU (by ROCm's rule it hides every GPU: a reader judges none). For
    judging the run only (release selection, the GPU rules): the workload itself gets the user's own."""
    vis = gpu_visibility(env, count)
    if not vis.chosen:
        return dict(env)
    out = {k: v for k, v in env.items() if k not in (ROCR, HIP, CUDA)}
    out[HIP] = ",".join(map(str, vis.visible)) if vis.visible else str(count)
    return out
