"""Reading back what a run recorded with :mod:`zluda_runner.ab`: ``records.jsonl`` and its ``.bin``
tensor files.  The folder is the workload's to write, so everything here is checked and bounded: the
records file and each tensor by size (a tensor's file must be a regular file in the folder, never a
device or a pipe), the values of one run in all by count, every line by JSON depth and shape.  What
does not pass is a problem of that run (its line and why), never an exception.
"""

from __future__ import annotations

import array
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.ab import RECORDS_FILE
from zluda_runner.abtest.model import Output
from zluda_runner.core.fsutil import read_regular

MAX_RECORDS_BYTES = 64 << 20  # records.jsonl: names, shapes, small inline value lists
MAX_VALUES = 1 << 25  # values read back from one run (32 Mi: a 256 MiB tensor file of float64)
_STORAGE = {"d": 8, "q": 8}  # ab.py writes float64 ("d") or int64 ("q"), little-endian


class RecordError(ValueError):
    """A record that cannot be read back (the message says why)."""


@dataclass
class Records:
    """One run's outputs (the first record of each name), timing samples and problems."""

    outputs: dict[str, Output] = field(default_factory=dict)
    timings: dict[str, list[float]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    values_left: int = 0  # how many more values this run may read back


def read_records(folder: Path) -> tuple[dict[str, Output], dict[str, list[float]], list[str]]:
    """Outputs (first record of each name wins), timing samples and the problems met reading them."""
    got = Records(values_left=MAX_VALUES)
    text, truncated = _read_records_file(folder / RECORDS_FILE, got.problems)
    lines = text.splitlines()
    if truncated and lines:
        lines.pop()  # cut in the middle
    for lineno, line in enumerate(lines, 1):
        if line.strip():
            try:
                _read_line(folder, line, got)
            except RecordError as exc:
                got.problems.append(f"unreadable record on line {lineno}: {exc}")
    if truncated:
        got.problems.append(f"{RECORDS_FILE} is larger than {MAX_RECORDS_BYTES >> 20} MiB: "
                            "the rest was not read")
    return got.outputs, got.timings, got.problems


def _read_records_file(path: Path, problems: list[str]) -> tuple[str, bool]:
    try:
        raw = read_regular(path, MAX_RECORDS_BYTES, more=True)
    except FileNotFoundError:
        return "", False
    except (OSError, RecordError) as exc:
        problems.append(f"cannot read {RECORDS_FILE}: {_why(exc)}")
        return "", False
    return raw[:MAX_RECORDS_BYTES].decode("utf-8", errors="replace"), len(raw) > MAX_RECORDS_BYTES


def _read_line(folder: Path, line: str, got: Records) -> None:
    try:
        entry = json.loads(line)
    except RecursionError:
        raise RecordError("nested too deeply") from None
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    if not isinstance(entry, dict):
        raise RecordError(f"a JSON {type(entry).__name__}, not an object")
    kind = entry.get("kind")
    name = entry.get("name")
    if kind not in ("output", "timing"):
        return  # a kind of record this version does not know
    if not isinstance(name, str):
        raise RecordError("its name is not a string")
    if kind == "timing":
        seconds = entry.get("seconds")
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds < 0:
            raise RecordError(f"timing {name!r}: seconds must be a number >= 0 (got {seconds!r:.40})")
        got.timings.setdefault(name, []).append(float(seconds))
    elif name not in got.outputs:
        got.outputs[name] = _output(folder, name, entry, got)


def _output(folder: Path, name: str, entry: dict[str, Any], got: Records) -> Output:
    dtype, shape, logits = entry.get("dtype"), entry.get("shape"), entry.get("logits")
    if not isinstance(dtype, str) or len(dtype) > 64:
        raise RecordError(f"output {name!r}: dtype must be a short string")
    if (not isinstance(shape, list) or len(shape) > 64
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)):
        raise RecordError(f"output {name!r}: shape must be a list of sizes >= 0")
    if logits is not None and not isinstance(logits, bool):
        raise RecordError(f"output {name!r}: logits must be true, false or absent")
    count = math.prod(shape)
    if count > got.values_left:
        raise RecordError(f"output {name!r}: {count} values are more than zluda-run reads back from one run "
                          f"({MAX_VALUES} in all): record a slice of it")
    values = _file_values(folder, name, entry, count) if "file" in entry else _inline_values(name, entry)
    if len(values) != count:
        raise RecordError(f"output {name!r}: shape {shape} needs {count} values, "
                          f"the record has {len(values)}")
    got.values_left -= count
    return Output(name=name, dtype=dtype, shape=tuple(shape), values=values, logits=logits)


def _file_values(folder: Path, name: str, entry: dict[str, Any], count: int) -> tuple[float, ...]:
    file, storage = entry.get("file"), entry.get("storage", "d")
    if not isinstance(file, str) or not file or Path(file).name != file or file in (".", ".."):
        raise RecordError(f"output {name!r}: its file must be a plain file name in the record folder")
    if not isinstance(storage, str) or storage not in _STORAGE:
        raise RecordError(f"output {name!r}: storage must be one of {sorted(_STORAGE)}")
    try:
        raw = read_regular(folder / file, count * _STORAGE[storage])
    except OSError as exc:
        raise RecordError(f"output {name!r}: cannot read {file}: {_why(exc)}") from None
    except RecordError as exc:
        raise RecordError(f"output {name!r}: {exc}") from None
    if len(raw) % _STORAGE[storage]:
        raise RecordError(f"output {name!r}: {file} holds {len(raw)} bytes, not whole values")
    data = array.array(storage)
    data.frombytes(raw)
    if sys.byteorder != "little":
        data.byteswap()
    return tuple(float(v) for v in data)


def _inline_values(name: str, entry: dict[str, Any]) -> tuple[float, ...]:
    values = entry.get("values")
    if not isinstance(values, list) or not all(_is_number(v) for v in values):
        raise RecordError(f"output {name!r}: values must be a list of numbers")
    try:
        return tuple(float(v) for v in values)
    except OverflowError:  # an integer beyond float's range
        raise RecordError(f"output {name!r}: a value is beyond float64's range") from None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float)


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else None) or str(exc)
