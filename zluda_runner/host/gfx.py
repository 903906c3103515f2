"""Facts about AMD GPU targets (``gfxNNNN``): generation, near-supported overrides, iGPUs.

A gfx name is ``gfx`` + major (decimal) + minor (one hex digit) + stepping (one hex
digit): ``gfx1100``, ``gfx1032``, ``gfx90a``.  The kernel's KFD topology stores the
same thing as ``gfx_target_version = major*10000 + minor*100 + stepping``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GFX_RE = re.compile(r"^gfx(\d{1,2})([0-9a-f])([0-9a-f])$")


def normalize_gfx(name: str | None) -> str | None:
    """``"gfx1100:sramecc-:xnack-"`` / ``"GFX1100"`` -> ``"gfx1100"``; None when it is no gfx name."""
    if not name:
        return None
    base = name.strip().lower().split(":", 1)[0]
    return base if _GFX_RE.match(base) else None


def gfx_from_target_version(value: int) -> str | None:
    """KFD ``gfx_target_version`` (e.g. 110000, 100302, 90010) -> ``gfx1100``, ``gfx1032``, ``gfx90a``."""
    if value <= 0:
        return None
    major, rest = divmod(value, 10000)
    minor, stepping = divmod(rest, 100)
    if minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def gfx_parts(gfx: str) -> tuple[int, int, int] | None:
    """``gfx1032`` -> (10, 3, 2)."""
    m = _GFX_RE.match(gfx)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16)


def hsa_version_to_gfx(version: str) -> str | None:
    """``HSA_OVERRIDE_GFX_VERSION`` value ``"10.3.0"`` -> ``"gfx1030"``."""
    parts = version.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    major, minor, stepping = (int(p) for p in parts)
    if minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def generation(gfx: str) -> str:
    """A coarse family name: ``gcn``, ``vega``, ``cdna``, ``rdna1``…``rdna4`` or ``unknown``."""
    parts = gfx_parts(gfx)
    if parts is None:
        return "unknown"
    major, minor, _ = parts
    if major < 9:
        return "gcn"
    if major == 9:
        return "cdna" if gfx in _CDNA else "vega"
    if major == 10:
        return "rdna1" if minor == 1 else "rdna2" if minor == 3 else "unknown"
    if major == 11:
        return "rdna3.5" if minor == 5 else "rdna3"
    if major == 12:
        return "rdna4"
    return "unknown"


_CDNA = frozenset({"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})


def is_rdna_or_newer(gfx: str) -> bool:
    """True for RX 5000 (RDNA1, gfx101x) and newer consumer parts: what the upstream ZLUDA rewrite needs."""
    parts = gfx_parts(gfx)
    return parts is not None and parts[0] >= 10


@dataclass(frozen=True)
class GfxOverride:
    """Run a near-supported gfx with the kernels of a supported sibling (Linux, ROCm's HSA runtime)."""

    gfx: str
    stand_in: str
    hsa_version: str

    @property
    def env(self) -> str:
        return f"HSA_OVERRIDE_GFX_VERSION={self.hsa_version}"


# Near-supported parts whose ISA matches a sibling that ROCm ships kernels for.
# The community-tested pairs: RDNA2 variants run gfx1030 code, RDNA3/3.5 variants gfx1100 code.
_OVERRIDES: dict[str, str] = {
    **{g: "gfx1030" for g in ("gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036")},
    **{g: "gfx1100" for g in ("gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152")},
}


def override_for(gfx: str) -> GfxOverride | None:
    """The ``HSA_OVERRIDE_GFX_VERSION`` that makes ``gfx`` use a supported sibling's kernels."""
    stand_in = _OVERRIDES.get(gfx)
    if stand_in is None:
        return None
    parts = gfx_parts(stand_in)
    assert parts is not None
    return GfxOverride(gfx=gfx, stand_in=stand_in, hsa_version=f"{parts[0]}.{parts[1]}.{parts[2]}")


# Integrated GPUs (APUs): Raven/Picasso/Renoir/Cezanne (Vega), Van Gogh, Rembrandt,
# Raphael/Granite Ridge, Mendocino, Phoenix/Hawk Point, Strix Point/Halo, Krackan.
APU_GFX = frozenset(
    {
        "gfx902",
        "gfx909",
        "gfx90c",
        "gfx1033",
        "gfx1035",
        "gfx1036",
        "gfx1037",
        "gfx1103",
        "gfx1150",
        "gfx1151",
        "gfx1152",
        "gfx1153",
    }
)

_DGPU_NAME_RE = re.compile(r"\b(RX|PRO|Instinct|MI\d+|W\d{4})\b", re.IGNORECASE)


def looks_integrated(gfx: str | None, name: str | None = None, cpu_cores: int = 0) -> bool:
    """Best guess whether an agent is an iGPU: known APU gfx, a KFD node with CPU cores, or a
    marketing name like "AMD Radeon(TM) Graphics" / "Radeon 780M Graphics" without RX/PRO."""
    if cpu_cores > 0:
        return True
    if gfx in APU_GFX:
        # gfx1151 (Strix Halo) is an APU too; every gfx in the set is integrated.
        return True
    return bool(name and "graphics" in name.lower() and not _DGPU_NAME_RE.search(name))
