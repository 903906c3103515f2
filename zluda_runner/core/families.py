"""The CUDA library families and how their files are named on Linux and Windows.

One vocabulary for the manifest (what a ZLUDA file stands in for), inspection
(what a CUDA build needs) and the planner (which shim serves which need).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# family -> (Linux stem, Windows stem).  The driver is special: libcuda.so.1 / nvcuda.dll.
FAMILIES: dict[str, tuple[str, str]] = {
    "driver": ("cuda", "nvcuda"),
    "nvml": ("nvidia-ml", "nvml"),
    "cudart": ("cudart", "cudart"),
    "cublas": ("cublas", "cublas"),
    "cublasLt": ("cublasLt", "cublasLt"),
    "cufft": ("cufft", "cufft"),
    "cufftw": ("cufftw", "cufftw"),
    "cusparse": ("cusparse", "cusparse"),
    "cusparseLt": ("cusparseLt", "cusparseLt"),
    "curand": ("curand", "curand"),
    "cusolver": ("cusolver", "cusolver"),
    "cusolverMg": ("cusolverMg", "cusolverMg"),
    "nvrtc": ("nvrtc", "nvrtc"),
    "nvrtc-builtins": ("nvrtc-builtins", "nvrtc-builtins"),
    "nvjitlink": ("nvJitLink", "nvJitLink"),
    "cudnn": ("cudnn", "cudnn"),
    "nccl": ("nccl", "nccl"),
    "cupti": ("cupti", "cupti"),
    "nvtx": ("nvToolsExt", "nvToolsExt"),
    "cufile": ("cufile", "cufile"),
    "nvshmem": ("nvshmem_host", "nvshmem_host"),
}

_LINUX_STEM_TO_FAMILY = {stem.lower(): fam for fam, (stem, _) in FAMILIES.items()}
_WINDOWS_STEM_TO_FAMILY = {stem.lower(): fam for fam, (_, stem) in FAMILIES.items()}

# libcublas.so.13 / libcublas.so.13.0.2 / libcublas.so
_LINUX_RE = re.compile(r"^lib(?P<stem>[A-Za-z_+-]+?)(?:\.so)(?:\.(?P<major>\d+))?(?:\.\d+)*$")
# cublas64_12.dll, cudart64_110.dll, nvrtc64_112_0.dll, cudnn64_9.dll, nvcuda.dll, cublas.dll
_WINDOWS_RE = re.compile(
    r"^(?P<stem>[A-Za-z_+-]+?)(?:64_(?P<major>\d+)(?:_\d+)?)?(?:\.alt)?\.dll$", re.IGNORECASE
)


@dataclass(frozen=True)
class LibraryName:
    """A parsed library file name: its family and the major in the name (if any)."""

    family: str
    major: int | None
    os: str  # "linux" | "windows"


def _windows_major(stem_major: str | None, family: str) -> int | None:
    if stem_major is None:
        return None
    digits = stem_major
    # cudart64_110.dll is CUDA 11.0; nvrtc64_112_0.dll is CUDA 11.2; cublas64_12 is 12.
    if len(digits) >= 3 and family in ("cudart", "nvrtc"):
        return int(digits[:-1])
    return int(digits)


def _stem_family(stem: str, table: dict[str, str]) -> str | None:
    lowered = stem.lower()
    if lowered in table:
        return table[lowered]
    # cuDNN 9 splits into libcudnn_graph, libcudnn_ops, ... : same family.
    head = lowered.split("_", 1)[0]
    return "cudnn" if head == "cudnn" else None


def parse_library_name(filename: str) -> LibraryName | None:
    """Family and major of a CUDA library file name, or None if it is not one of ours."""
    name = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    m = _LINUX_RE.match(name)
    if m:
        family = _stem_family(m.group("stem"), _LINUX_STEM_TO_FAMILY)
        if family:
            major = m.group("major")
            return LibraryName(family, int(major) if major else None, "linux")
        return None
    m = _WINDOWS_RE.match(name)
    if m:
        family = _stem_family(m.group("stem"), _WINDOWS_STEM_TO_FAMILY)
        if family:
            return LibraryName(family, _windows_major(m.group("major"), family), "windows")
    return None


def family_of(filename: str) -> str | None:
    parsed = parse_library_name(filename)
    return parsed.family if parsed else None
