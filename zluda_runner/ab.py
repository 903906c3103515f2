"""Record named outputs and timed regions for ``zluda-run ab`` -- from inside the workload.

    from zluda_runner import ab
    ab.record("logits", logits)          # a tensor, a number or a list of numbers
    with ab.timer("generate"):
        out = model.generate(...)

Outside ``zluda-run ab`` (no ``ZLUDA_RUNNER_AB_DIR`` in the environment) every call is a
no-op: one dictionary lookup, no output, no file.  This module runs in the *target*
interpreter, which may have nothing but torch: it imports only the standard library,
and touches torch only when a tensor is recorded or a timer stops on a GPU.

Inside ``ab``, records go to ``$ZLUDA_RUNNER_AB_DIR/records.jsonl`` (one JSON object a
line) and the values of tensors, and of lists or arrays longer than ``INLINE_VALUES``, to
``$ZLUDA_RUNNER_AB_DIR/<n>.bin`` (little-endian float64, or int64 for integer/bool values).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

AB_DIR_ENV = "ZLUDA_RUNNER_AB_DIR"
RECORDS_FILE = "records.jsonl"
INLINE_VALUES = 1024  # more values than this go to a .bin file: records.jsonl stays small
_INT64 = (-(2**63), 2**63 - 1)
_counter = [0]


def enabled() -> bool:
    """True when running under ``zluda-run ab``."""
    return bool(os.environ.get(AB_DIR_ENV))


def record(name: str, value: Any, *, logits: bool | None = None) -> None:
    """Record an output to compare between the two sides.  ``logits`` turns on argmax
    agreement (default: when the name contains "logit")."""
    out = os.environ.get(AB_DIR_ENV)
    if not out:
        return
    entry: dict[str, Any] = {"kind": "output", "name": str(name)}
    if logits is not None:
        entry["logits"] = bool(logits)
    if _is_tensor(value):
        entry.update(_save_tensor(Path(out), value))
    else:
        flat, shape, dtype = _plain_values(value)
        if len(flat) > INLINE_VALUES:  # a long list or an array: its own file, as a tensor's
            entry.update({"dtype": dtype, "shape": shape, **_save_flat(Path(out), flat)})
        else:
            entry.update({"dtype": dtype, "shape": shape, "values": flat})
    _append(Path(out), entry)


@contextmanager
def _timed(name: str, out: str) -> Iterator[None]:
    _sync()
    start = time.perf_counter()
    try:
        yield
    finally:
        _sync()
        _append(Path(out), {"kind": "timing", "name": str(name), "seconds": time.perf_counter() - start})


class _Inert:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_INERT = _Inert()


def timer(name: str) -> Any:
    """``with ab.timer("generate"): ...`` -- wall time of the block (GPU work synchronised)."""
    out = os.environ.get(AB_DIR_ENV)
    if not out:
        return _INERT
    return _timed(name, out)


# --------------------------------------------------------------------------- internals


def _append(folder: Path, entry: dict[str, Any]) -> None:
    """One line, in one ``write`` to a file opened for appending: processes that record at once (DataLoader
    workers, ranks) each add whole lines (a buffered text file writes a long line in pieces)."""
    import json  # only under ``ab``: importing this module stays near free

    folder.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(entry) + "\n").encode("utf-8")
    fd = os.open(folder / RECORDS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0),
                 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _bin_name() -> str:
    _counter[0] += 1
    return f"{os.getpid()}-{_counter[0]}.bin"


def _write_bin(folder: Path, raw: bytes) -> str:
    name = _bin_name()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "wb") as fh:
        fh.write(raw)
    return name


def _save_flat(folder: Path, flat: list[float | int]) -> dict[str, Any]:
    """Plain values in a .bin file: int64 when every value is an integer that fits, else float64."""
    import array

    integral = all(isinstance(v, int) and _INT64[0] <= v <= _INT64[1] for v in flat)
    data = array.array("q" if integral else "d", flat)
    if sys.byteorder != "little":
        data.byteswap()
    return {"file": _write_bin(folder, data.tobytes()), "storage": "q" if integral else "d"}


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _sync() -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:  # a broken device must not turn timing into a crash of the workload
        return


def _save_tensor(folder: Path, tensor: Any) -> dict[str, Any]:
    import array

    import torch

    t = tensor.detach()
    dtype = str(t.dtype).replace("torch.", "")
    shape = list(t.shape)
    if t.is_complex():
        t = torch.view_as_real(t)
        shape = [*shape, 2]
    t = t.to("cpu")
    integral = not (t.is_floating_point())
    t = t.to(torch.int64 if integral else torch.float64).contiguous().reshape(-1)
    try:  # numpy, when torch has it, writes a large tensor without a Python list in between
        raw = t.numpy().astype("<i8" if integral else "<f8", copy=False).tobytes()
    except (RuntimeError, TypeError, ImportError):
        data = array.array("q" if integral else "d", t.tolist())
        if sys.byteorder != "little":
            data.byteswap()
        raw = data.tobytes()
    storage = "q" if integral else "d"
    return {"dtype": dtype, "shape": shape, "file": _write_bin(folder, raw), "storage": storage}


def _plain_values(value: Any) -> tuple[list[float | int], list[int], str]:
    """A number, a (nested, rectangular) list of numbers, or an array with ``tolist()`` (numpy)."""
    dtype = str(getattr(value, "dtype", "")) or None
    if not isinstance(value, bool | int | float | list | tuple) and hasattr(value, "tolist"):
        value = value.tolist()
    flat, shape = _flatten(value)
    if dtype is None:
        dtype = "int64" if all(isinstance(v, bool | int) for v in flat) else "float64"
    if dtype == "bool" or all(isinstance(v, bool | int) for v in flat):
        return [int(v) for v in flat], shape, dtype
    return [float(v) for v in flat], shape, dtype


def _flatten(value: Any) -> tuple[list[Any], list[int]]:
    if isinstance(value, bool | int | float):
        return [value], []
    if isinstance(value, list | tuple):
        parts = [_flatten(v) for v in value]
        inner = parts[0][1] if parts else []
        if any(shape != inner for _, shape in parts):
            raise TypeError("ab.record: a nested list must be rectangular (all rows the same shape)")
        return [x for flat, _ in parts for x in flat], [len(parts), *inner]
    raise TypeError(
        f"ab.record: cannot record a {type(value).__name__}; give a tensor, a number or a list of numbers"
    )
