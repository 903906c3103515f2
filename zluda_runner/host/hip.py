"""A thin cffi (ABI mode) edge to the HIP runtime: device count, names, gfx, memory, versions.

Nothing here needs headers or a compiler.  The struct-free calls (``hipDeviceGetName``,
``hipDeviceTotalMem``) give name and memory.  The gfx name (``gcnArchName``) exists only
inside ``hipDeviceProp_t``, whose layout changed between HIP 5 (``R0000``) and HIP 6+
(``R0600``); instead of hard-coding offsets we let HIP fill an oversized zeroed buffer and
look for the ``gfxNNNN[:features]`` string after the 256-byte ``name`` field, which both
layouts start with.

HIP can hang or crash on a broken driver, so :func:`query_hip_isolated` runs the query in
a child interpreter (``python -m zluda_runner.host.hip``) with a timeout; :func:`query_hip`
is the in-process form.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from zluda_runner.core.serial import JsonMixin
from zluda_runner.host.gfx import normalize_gfx

LINUX_LIBRARIES = ("libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so")
WINDOWS_LIBRARIES = ("amdhip64_7.dll", "amdhip64_6.dll", "amdhip64.dll")

_CDEF = """
int hipGetDeviceCount(int *count);
int hipDeviceGetName(char *name, int len, int device);
int hipDeviceTotalMem(size_t *bytes, int device);
int hipRuntimeGetVersion(int *version);
int hipDriverGetVersion(int *version);
int hipGetDevicePropertiesR0600(void *prop, int device);
int hipGetDeviceProperties(void *prop, int device);
"""

HIP_SUCCESS = 0
HIP_ERROR_NO_DEVICE = 100
_PROP_BUFFER_BYTES = 16384  # hipDeviceProp_tR0600 is ~1.5 KiB; room for growth
_NAME_FIELD_BYTES = 256
# why the runtime could not be asked: its library would not load, hipGetDeviceCount failed, the child
# asking it hung, could not start, died, or answered something unreadable
HipFailure: TypeAlias = Literal["not-loadable", "device-count", "timed-out", "not-started", "died",
                                "unreadable"]
_ARCH_RE = re.compile(rb"gfx[0-9a-f]{3,4}(?::[a-zA-Z0-9_]+[+-])*")


@dataclass
class HipDevice(JsonMixin):
    index: int
    name: str
    gcn_arch_name: str | None = None
    gfx: str | None = None
    total_memory_bytes: int | None = None


@dataclass
class HipInfo(JsonMixin):
    """What the HIP runtime said; ``error`` is set when it could not be asked, ``failure`` says why in
    one stable word (:data:`HipFailure`)."""

    library: str | None = None
    runtime_version: int | None = None
    driver_version: int | None = None
    devices: list[HipDevice] = field(default_factory=list)
    error: str | None = None
    failure: HipFailure | None = None

    @property
    def runtime_version_text(self) -> str | None:
        return format_hip_version(self.runtime_version)


def format_hip_version(value: int | None) -> str | None:
    """HIP encodes versions as ``major*10_000_000 + minor*100_000 + patch``: 60241134 -> ``6.2.41134``."""
    if value is None or value <= 0:
        return None
    major, rest = divmod(value, 10_000_000)
    minor, patch = divmod(rest, 100_000)
    return f"{major}.{minor}.{patch}"


def default_library_names() -> tuple[str, ...]:
    return WINDOWS_LIBRARIES if sys.platform == "win32" else LINUX_LIBRARIES


def _load_error_text(text: str) -> str:
    """cffi's load error, short: "not found" for a missing file (ld.so's "cannot open shared object",
    Windows error 0x7e ERROR_MOD_NOT_FOUND, with cffi's find_library() sentence dropped)."""
    if "cannot open shared object" in text or "error 0x7e" in text:
        return "not found"
    return text.split("  Additionally, ctypes.util.find_library()")[0].strip()[:200]


# cffi ships no type stubs; its FFI object, the library dlopen() gives and that library's functions
# are built at run time from _CDEF, so they are dynamic by nature.
CffiObject: TypeAlias = Any


def _open(names: Sequence[str]) -> tuple[CffiObject, CffiObject, str]:
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(_CDEF)
    errors: list[str] = []
    for name in names:
        try:
            return ffi, ffi.dlopen(name), name
        except OSError as exc:
            errors.append(f"{name}: {_load_error_text(str(exc))}")
    raise OSError("; ".join(errors) if errors else "no HIP library names given")


def _optional(lib: CffiObject, symbol: str) -> CffiObject | None:
    try:
        return getattr(lib, symbol)
    except AttributeError:
        return None


def arch_name_from_properties(buffer: bytes) -> str | None:
    """Find ``gcnArchName`` (``gfx1100:sramecc-:xnack-``) in a filled ``hipDeviceProp_t`` buffer."""
    pos = _NAME_FIELD_BYTES
    while True:
        m = _ARCH_RE.search(buffer, pos)
        if m is None:
            return None
        # a field starts on its own: preceded by NUL padding and followed by NUL
        starts_clean = buffer[m.start() - 1] == 0
        ends_clean = m.end() < len(buffer) and buffer[m.end()] == 0
        if starts_clean and ends_clean:
            return m.group(0).decode("ascii")
        pos = m.end()


def query_hip(library_names: Sequence[str] | None = None) -> HipInfo:
    """Ask the HIP runtime in this process.  Never raises for a missing/broken runtime."""
    names = tuple(library_names) if library_names else default_library_names()
    try:
        ffi, lib, name = _open(names)
    except OSError as exc:
        return HipInfo(error=f"HIP runtime not loadable ({exc})", failure="not-loadable")
    info = HipInfo(library=name)
    version = ffi.new("int *")
    if _optional(lib, "hipRuntimeGetVersion") and lib.hipRuntimeGetVersion(version) == HIP_SUCCESS:
        info.runtime_version = int(version[0])
    if _optional(lib, "hipDriverGetVersion") and lib.hipDriverGetVersion(version) == HIP_SUCCESS:
        info.driver_version = int(version[0])
    count = ffi.new("int *")
    rc = lib.hipGetDeviceCount(count)
    if rc == HIP_ERROR_NO_DEVICE:
        return info
    if rc != HIP_SUCCESS:
        info.error, info.failure = f"hipGetDeviceCount failed with HIP error {rc}", "device-count"
        return info
    get_props = _optional(lib, "hipGetDevicePropertiesR0600") or _optional(lib, "hipGetDeviceProperties")
    for index in range(int(count[0])):
        info.devices.append(_device(ffi, lib, get_props, index))
    return info


def _device(ffi: CffiObject, lib: CffiObject, get_props: CffiObject | None, index: int) -> HipDevice:
    name_buf = ffi.new("char[]", _NAME_FIELD_BYTES)
    name = ""
    if lib.hipDeviceGetName(name_buf, _NAME_FIELD_BYTES, index) == HIP_SUCCESS:
        name = ffi.string(name_buf).decode("utf-8", "replace")
    device = HipDevice(index=index, name=name)
    mem = ffi.new("size_t *")
    if _optional(lib, "hipDeviceTotalMem") and lib.hipDeviceTotalMem(mem, index) == HIP_SUCCESS:
        device.total_memory_bytes = int(mem[0])
    if get_props is not None:
        props = ffi.new("char[]", _PROP_BUFFER_BYTES)
        if get_props(props, index) == HIP_SUCCESS:
            raw = bytes(ffi.buffer(props, _PROP_BUFFER_BYTES))
            device.gcn_arch_name = arch_name_from_properties(raw)
            device.gfx = normalize_gfx(device.gcn_arch_name)
            if not device.name:
                device.name = raw[:_NAME_FIELD_BYTES].split(b"\0", 1)[0].decode("utf-8", "replace")
    return device


# Variables that make HIP hide, reorder or re-label devices.  The doctor wants to see every
# device as it is, then apply the user's settings itself (to say which device wins and why).
DEVICE_SELECTION_ENV = (
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "HSA_OVERRIDE_GFX_VERSION",
)


def query_hip_isolated(
    library_names: Sequence[str] | None = None,
    *,
    python: str | None = None,
    timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
) -> HipInfo:
    """:func:`query_hip` in a child interpreter, so a hanging or crashing runtime cannot take us down.

    The child gets ``env`` (default: this process's) without :data:`DEVICE_SELECTION_ENV`, so
    it reports every device with its real gfx.
    """
    argv = [python or sys.executable, "-m", "zluda_runner.host.hip", *(library_names or ())]
    base = os.environ if env is None else env
    child_env = {k: v for k, v in base.items() if k not in DEVICE_SELECTION_ENV}
    from zluda_runner.core.child import json_line, run_child  # a run only reads the host's files

    result = run_child(argv, timeout=timeout, env=child_env)
    if result.timed_out:
        return HipInfo(error=f"the HIP runtime did not answer within {timeout:.0f} s (driver hang?)",
                       failure="timed-out")
    if result.start_error is not None:
        return HipInfo(error=f"could not start {argv[0]}: {result.start_error}", failure="not-started")
    if not result.ok:
        tail = result.stderr.strip().splitlines()[-1:] or [""]
        return HipInfo(error=f"the HIP query process died (exit {result.returncode}) {tail[0]}".strip(),
                       failure="died")
    answer = json_line(result.stdout)  # the last line: a chatty runtime may print before it
    if not isinstance(answer, dict):
        return HipInfo(error="unreadable answer from the HIP query process", failure="unreadable")
    try:
        return HipInfo.from_dict(answer)
    except (ValueError, TypeError) as exc:
        return HipInfo(error=f"unreadable answer from the HIP query process: {exc!r}", failure="unreadable")


def _main(argv: list[str]) -> int:
    print(json.dumps(query_hip(argv or None).to_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
