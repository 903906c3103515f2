"""What every probe case builds on: the :class:`Setup` helpers, the :class:`Case` record, checks.

A case gets a :class:`Setup` whose helpers (``device()``, ``context()``, ``module()`` ...) make,
in a fresh process, whatever the case builds on; ``needs`` names only the earlier cases that
prove what the case cannot do without, so a case whose true prerequisite failed is skipped.
Where CUDA allows a fallback (the default NULL stream when streams cannot be created) the
helper takes it and notes it, and the note ends up in the case's detail.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zluda_runner.probe.bindings import CallFailed, Driver, MissingFunction

if TYPE_CHECKING:
    from zluda_runner.probe.blas import Blas

PTX_FILE = Path(__file__).resolve().parent.parent / "vadd.ptx"
N = 1024
CU_STREAM_NON_BLOCKING = 1
CU_EVENT_DEFAULT = 0
CU_MEM_ATTACH_GLOBAL = 1
CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_ARRAY = 1, 2, 3
CU_AD_FORMAT_FLOAT = 0x20
CUDA_ERROR_NOT_SUPPORTED = 801


class CheckFailed(Exception):
    """The calls succeeded, the results are wrong (by ``max_abs_err`` / ``max_rel_err`` where numbers
    were compared)."""

    def __init__(self, message: str, max_abs_err: float | None = None, max_rel_err: float | None = None
                 ) -> None:
        super().__init__(message)
        self.max_abs_err, self.max_rel_err = max_abs_err, max_rel_err


class NotApplicable(Exception):
    """The case cannot say anything on this machine (e.g. peer copies with one device)."""


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


def float_bits(value: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", value))[0])


class Setup:
    """Lazily made prerequisites, shared by the cases of one worker process."""

    def __init__(self, driver: Driver, blas: Blas | None = None) -> None:
        self.d = driver
        self.blas = blas  # the cuBLAS beside the driver (None: there is none)
        self.ffi = driver.ffi
        self._done: dict[str, Any] = {}
        self.notes: list[str] = []
        self.keep: list[Any] = []  # cffi objects that must outlive a call (callbacks, images)

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._done:
            self._done[key] = make()
        return self._done[key]

    def init(self) -> None:
        self._once("init", lambda: self.d.call("cuInit", 0))

    def device(self) -> int:
        def make() -> int:
            self.init()
            dev = self.ffi.new("CUdevice *")
            self.d.call("cuDeviceGet", dev, 0)
            return int(dev[0])

        return int(self._once("device", make))

    def cublas(self) -> Blas:
        """The cuBLAS library the cuBLAS cases call (:class:`NotApplicable` where there is none)."""
        if self.blas is None:
            raise NotApplicable(f"no cuBLAS beside {self.d.path}")
        return self.blas

    def device_count(self) -> int:
        self.init()
        n = self.ffi.new("int *")
        self.d.call("cuDeviceGetCount", n)
        return int(n[0])

    def context(self) -> Any:
        def make() -> Any:
            ctx = self.ffi.new("CUcontext *")
            self.d.call("cuDevicePrimaryCtxRetain", ctx, self.device())
            self.d.call("cuCtxSetCurrent", ctx[0])
            return ctx[0]

        return self._once("context", make)

    def restore_context(self) -> None:
        """Make the primary context current again, if an earlier case set it up."""
        if "context" in self._done:
            self.d.call("cuCtxSetCurrent", self._done["context"])

    def alloc(self, nbytes: int) -> int:
        self.context()
        ptr = self.ffi.new("CUdeviceptr *")
        self.d.call("cuMemAlloc", ptr, nbytes)
        return int(ptr[0])

    def stream(self) -> Any:
        def make() -> Any:
            self.context()
            s = self.ffi.new("CUstream *")
            self.d.call("cuStreamCreate", s, CU_STREAM_NON_BLOCKING)
            return s[0]

        return self._once("stream", make)

    def stream_or_default(self) -> Any:
        """A created stream, or the default (NULL) stream when streams cannot be created."""
        try:
            return self.stream()
        except (MissingFunction, CallFailed) as exc:
            self.notes.append(f"on the default (NULL) stream: stream creation failed ({exc})")
            return self.ffi.NULL

    def event(self) -> Any:
        self.context()
        ev = self.ffi.new("CUevent *")
        self.d.call("cuEventCreate", ev, CU_EVENT_DEFAULT)
        return ev[0]

    def ptx(self) -> Any:
        return self._once("ptx_image", lambda: self.ffi.new("char[]", PTX_FILE.read_bytes()))

    def module(self) -> Any:
        def make() -> Any:
            self.context()
            mod = self.ffi.new("CUmodule *")
            self.d.call("cuModuleLoadData", mod, self.ptx())
            return mod[0]

        return self._once("module", make)

    def function(self) -> Any:
        def make() -> Any:
            fn = self.ffi.new("CUfunction *")
            self.d.call("cuModuleGetFunction", fn, self.module(), b"vadd")
            return fn[0]

        return self._once("function", make)

    # data helpers
    def upload_floats(self, values: list[float]) -> int:
        ptr = self.alloc(4 * len(values))
        data = self.ffi.new("float[]", values)
        self.d.call("cuMemcpyHtoD", ptr, data, 4 * len(values))
        return ptr

    def download_floats(self, ptr: int, n: int) -> list[float]:
        out = self.ffi.new("float[]", n)
        self.d.call("cuMemcpyDtoH", out, ptr, 4 * n)
        return list(out)

    def download_bytes(self, ptr: int, n: int) -> bytes:
        out = self.ffi.new("unsigned char[]", n)
        self.d.call("cuMemcpyDtoH", out, ptr, n)
        return bytes(self.ffi.buffer(out, n))

    def vadd_params(self, a: int, b: int, c: int, n: int) -> Any:
        args = [
            self.ffi.new("CUdeviceptr *", a),
            self.ffi.new("CUdeviceptr *", b),
            self.ffi.new("CUdeviceptr *", c),
            self.ffi.new("int *", n),
        ]
        params = self.ffi.new("void *[]", [self.ffi.cast("void *", p) for p in args])
        self.keep += [args, params]
        return params

    def launch_vadd(self, stream: Any, a: int, b: int, c: int, n: int) -> None:
        block = 256
        grid = (n + block - 1) // block
        params = self.vadd_params(a, b, c, n)
        self.d.call(
            "cuLaunchKernel", self.function(), grid, 1, 1, block, 1, 1, 0, stream, params, self.ffi.NULL
        )

    def vadd_inputs(self, n: int = N) -> tuple[int, int, int, list[float]]:
        """Device buffers a, b, c for vadd and the sum it must produce."""
        a_vals = [float(i) for i in range(n)]
        b_vals = [float(2 * i) + 0.25 for i in range(n)]
        a, b = self.upload_floats(a_vals), self.upload_floats(b_vals)
        return a, b, self.alloc(4 * n), [x + y for x, y in zip(a_vals, b_vals, strict=True)]


@dataclass(frozen=True)
class Case:
    id: str
    area: str
    title: str
    run: Callable[[Setup], str | None]  # returns a detail line (or None)
    needs: tuple[str, ...] = ()


Run = Callable[[Setup], "str | None"]


def collector(into: list[Case], area: str) -> Callable[..., Callable[[Run], Run]]:
    """``@case("id", "title", needs)`` appends a :class:`Case` of ``area`` to ``into``."""

    def case(case_id: str, title: str, *needs: str) -> Callable[[Run], Run]:
        def add(fn: Run) -> Run:
            into.append(Case(f"{area}.{case_id}", area, title, fn, tuple(needs)))
            return fn

        return add

    return case
