"""The GPU x HIP rules at work: which of the manifest's ``gpu_hip_rules`` a host breaks, and which assets
they keep out. One check for selection (:mod:`zluda_runner.release.selection`), ``doctor`` and the plan.

A rule (:class:`~zluda_runner.release.model.GpuHipRule`) says what HIP a GPU generation needs on an OS, where
a source says so: a minimum, a maximum, versions known not to work (``broken``), and optionally only for HIP
from one kind of install (``hip_from``: Debian's packaged ROCm 6.4 has no gfx12 kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

from zluda_runner.release.model import (
    Asset,
    GpuHipRule,
    HipRequirement,
    parse_version,
    version_at_least,
    version_at_most,
)


def rules_against(rules: Sequence[GpuHipRule], gfx: str | None, hip: str | None, os: str | None,
                  hip_from: str | None = None) -> list[GpuHipRule]:
    """The rules ``gfx`` with ``hip`` (from ``hip_from``) on ``os`` breaks."""
    if not gfx or not hip:
        return []
    try:
        parse_version(hip)
    except ValueError:
        return []
    return [r for r in rules if r.applies(gfx, os, hip_from) and not r.accepts(hip)]


def rule_warnings(rules: Sequence[GpuHipRule], gfx: str | None, hip: str | None, os: str | None,
                  hip_from: str | None = None) -> list[str]:
    """What a run or a plan warns for the GPU it uses: each rule the host's HIP breaks, in its words with
    its fix and source (the text selection and ``doctor`` give)."""
    return [r.reason(gfx or "", hip or "") for r in rules_against(rules, gfx, hip, os, hip_from)]


def rule_reasons(asset: Asset, gfx: str | None, hip: str | None, rules: Sequence[GpuHipRule]) -> list[str]:
    """Why the (already applicable) ``rules`` keep ``asset`` out for ``gfx``, in their words: judged by the
    HIP the asset runs on, whichever release it is (:func:`runs_on`).

    A release on the host's HIP (SDK, ROCm): with that HIP known, a rule it breaks rejects the asset; without
    it, an asset whose HIP requirement lies wholly where the rule says the GPU does not work (an RDNA4 GPU and
    a HIP SDK 5.7 build). A release on the AMD driver's own runtime: that runtime's HIP line (upstream v5 on
    Windows loads amdhip64_6: HIP 6 for a GPU that needs 7.2), never the SDK's; a rule about one kind of
    install (``hip_from``) is not about it."""
    if not gfx:
        return []
    out = []
    driver = asset.hip.kind == "driver"
    for rule in rules:
        if driver:
            line = asset.hip.driver_hip
            if line and rule.hip_from is None and outside(runs_on(asset.hip), rule):
                out.append(f"for your GPU: {rule.reason(gfx, line)}; it runs on the AMD driver's HIP {line} "
                           f"runtime ({asset.hip.describe()}), whatever HIP SDK is installed")
        elif hip:
            if not rule.accepts(hip):
                out.append(f"for your GPU: {rule.reason(gfx, hip)}")
        elif outside(asset.hip, rule):
            out.append(f"for your GPU: {gfx} cannot use it: it needs {asset.hip.describe()}, and "
                       f"{rule.label} (it needs {rule.needs()}) [{rule.source.cite()}]")
    return out


def runs_on(req: HipRequirement) -> HipRequirement:
    """The HIP a release runs on, as a requirement: the driver's runtime line for a ``driver`` one (``6``:
    any 6.x), else ``req`` itself."""
    if req.kind != "driver" or not req.driver_hip:
        return req
    return HipRequirement("runtime", min=req.driver_hip, max=req.driver_hip)


def outside(req: HipRequirement, rule: GpuHipRule) -> bool:
    """Every HIP version ``req`` accepts breaks ``rule`` (as far as the bounds tell)."""
    if req.kind == "driver" or not req.known:
        return False
    lo = parse_version(req.min) if req.min else None
    hi = parse_version(req.max) if req.max else None
    if rule.min and hi is not None and not version_at_least(hi, parse_version(rule.min)):
        return True
    if rule.max and lo is not None and not version_at_most(lo, parse_version(rule.max)):
        return True
    for broken in rule.broken:
        b = parse_version(broken)
        if lo is not None and hi is not None and lo[: len(b)] == b and hi[: len(b)] == b:
            return True
    return False


def gpu_defaults(rules: Sequence[GpuHipRule], gfxs: Sequence[str], os: str) -> dict[str, str]:
    """The launch defaults the rules name for any of ``gfxs`` on ``os`` (``cudnn-off`` for gfx1150-gfx1153 on
    Windows), each with why and the rule's source: what the plan applies whatever the HIP."""
    out: dict[str, str] = {}
    for rule in rules:
        hit = next((g for g in gfxs if g in rule.gfx), None)
        if hit is None or (rule.os is not None and rule.os != os):
            continue
        for name in rule.defaults:
            out.setdefault(name, f"{hit}: {rule.defaults_why} [{rule.source.cite()}]")
    return out

