"""Results bundles: how runs travel between machines.

Format (version 1), UTF-8 JSON lines:

* line 1, the header::

    {"format": "zluda-runner-results", "version": 1, "exported_at": "2025-01-31T12:00:00.000000Z",
     "runs": 2, "schema": 2}

* then one line per run, oldest first::

    {"run": {"run_id": "<sha256>", "kind": "torch-ops", "started_at": "<ISO-8601 UTC>",
             "host": {"os": "linux", "kernel": "...", "arch": "x86_64", "gpu_name": "...", "gfx": "gfx1100",
                      "hip_version": "6.2", "driver_version": "...", "host_id": "<hashed host name>"},
             "release": {"id": "fork-3.9.5", "asset": "...", "sha256": "..."} | null,
             "target": {"torch_version": "2.4.1+cu118", "cuda_major": 11} | {"binary": "..."} | null,
             "command": ["zluda-run", "probe", "--torch"],
             "summary": {"passed": 97, "failed": 3, "total": 100, "items": 104, "verdict": "..."},
             "items": [{"item": "matmul/float16", "status": "pass", "ok": true, "detail": "",
                        "numbers": {"max_abs_err": 0.0}}]}}

``run_id`` is the SHA-256 of the run's canonical JSON (sorted keys, no spaces) without
``run_id`` itself, so importing the same run twice stores it once, and a run edited
after export is refused. Nothing personal is in a bundle: host names are hashed, the
home folder is written ``~`` and the login name ``<user>`` (done when the run was
recorded). Readers ignore header keys they do not know; a higher ``version`` is refused.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from zluda_runner.core.fsutil import NotRegularFileError, atomic_open, open_regular
from zluda_runner.results.schema import (
    COUNT_KEYS,
    KINDS,
    MAX_COUNT,
    MAX_ITEMS_PER_RUN,
    SCHEMA_VERSION,
    ItemRecord,
    ResultsStoreError,
    RunRecord,
    canonical_json,
    content_id,
    summary_count,
)
from zluda_runner.results.store import ResultsStore, now_iso

BUNDLE_FORMAT = "zluda-runner-results"
BUNDLE_VERSION = 1
MAX_BUNDLE_BYTES = 1 << 30
MAX_LINE_BYTES = 64 << 20
MAX_DEPTH = 6
_BATCH = 200
_SINCE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?$")


def check_since(since: str | None) -> str | None:
    if since is None:
        return None
    if not _SINCE.match(since):
        raise ResultsStoreError(
            f"--since {since!r} is not a date", "give YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)"
        )
    return since.replace(" ", "T")


def export_bundle(store: ResultsStore, path: Path, *, since: str | None = None) -> int:
    """Write the runs (since a date) to ``path`` atomically; returns how many."""
    runs = store.list_runs(since=check_since(since))
    path = Path(path)
    try:
        with atomic_open(path, "w", newline="\n") as out:  # a device or FIFO is written in place
            header = {
                "format": BUNDLE_FORMAT,
                "version": BUNDLE_VERSION,
                "exported_at": now_iso(),
                "runs": len(runs),
                "schema": SCHEMA_VERSION,
            }
            out.write(json.dumps(header, sort_keys=True) + "\n")
            for start in range(0, len(runs), _BATCH):
                ids = [r.run_id for r in runs[start : start + _BATCH]]
                for run in store.get_runs(ids):
                    out.write(canonical_json({"run": run.to_dict()}) + "\n")
    except OSError as exc:
        raise ResultsStoreError(
            f"cannot write {path}: {exc.strerror or exc}", "check the folder and free space"
        ) from exc
    return len(runs)


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _scalars(value: Any, what: str, nullable: bool = False) -> dict[str, Any] | None:
    if value is None and nullable:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str | int | float | bool))
        for k, v in value.items()
    ):
        raise ValueError(f"{what} must be an object of plain values")
    return value


_SUMMARY_TEXT = ("verdict", "verdict_text", "load", "faster")


def _summary(value: Any) -> dict[str, Any]:
    """The summary's own fields have their types: counts are counts, texts are texts."""
    summary = _scalars(value, "summary") or {}
    for key in COUNT_KEYS:
        if key in summary and (isinstance(summary[key], bool) or summary_count(summary, key) != summary[key]):
            raise ValueError(f"summary {key} must be a count (0..{MAX_COUNT}), not {summary[key]!r}")
    for key in _SUMMARY_TEXT:
        if summary.get(key) is not None and not isinstance(summary[key], str):
            raise ValueError(f"summary {key} must be text, not {summary[key]!r}")
    if summary.get("agree") is not None and not isinstance(summary["agree"], bool):
        raise ValueError(f"summary agree must be true, false or null, not {summary['agree']!r}")
    code = summary.get("exit_code")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int) or abs(code) > 1 << 32):
        raise ValueError(f"summary exit_code must be a whole number, not {code!r}")
    return summary


def _item(data: Any) -> ItemRecord:
    if not isinstance(data, dict):
        raise ValueError("an item must be an object")
    item, status, ok, detail = data.get("item"), data.get("status"), data.get("ok"), data.get("detail", "")
    numbers = data.get("numbers", {})
    if not isinstance(item, str) or not isinstance(status, str) or not isinstance(detail, str):
        raise ValueError("an item needs string item/status/detail")
    if ok is not None and not isinstance(ok, bool):
        raise ValueError("an item's ok must be true, false or null")
    if not isinstance(numbers, dict) or not all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in numbers.values()
    ):
        raise ValueError("an item's numbers must be numbers or null")
    return ItemRecord(
        item, status, ok, detail, {str(k): None if v is None else float(v) for k, v in numbers.items()}
    )


def run_from_bundle(data: Any) -> RunRecord:
    """A run from its bundle object, checked field by field and against its id (raises ValueError)."""
    if not isinstance(data, dict) or not isinstance(data.get("run"), dict):
        raise ValueError('expected {"run": {...}}')
    raw = data["run"]
    if raw.get("kind") not in KINDS:
        raise ValueError(f"unknown kind {raw.get('kind')!r}")
    if not isinstance(raw.get("started_at"), str) or not isinstance(raw.get("run_id"), str):
        raise ValueError("run_id and started_at must be strings")
    command = raw.get("command", [])
    if not isinstance(command, list) or not all(isinstance(w, str) for w in command):
        raise ValueError("command must be a list of strings")
    items = raw.get("items", [])
    if not isinstance(items, list) or len(items) > MAX_ITEMS_PER_RUN:
        raise ValueError(f"items must be a list of at most {MAX_ITEMS_PER_RUN}")
    run = RunRecord(
        kind=raw["kind"],
        started_at=raw["started_at"],
        host=_scalars(raw.get("host", {}), "host") or {},
        release=_scalars(raw.get("release"), "release", nullable=True),
        target=_scalars(raw.get("target"), "target", nullable=True),
        command=command,
        summary=_summary(raw.get("summary", {})),
        items=[_item(i) for i in items],
        run_id=raw["run_id"],
    )
    if content_id(run) != run.run_id:
        raise ValueError("run_id does not match the run's content (edited or damaged after export)")
    return run


def read_bundle(path: Path) -> Iterator[RunRecord]:
    """The runs in a bundle, checked; a bad bundle raises ResultsStoreError naming the line."""
    path = Path(path)
    try:
        handle = open_regular(path)  # a FIFO or pipe is refused at once: a bundle is read twice
        size = os.fstat(handle.fileno()).st_size
    except NotRegularFileError as exc:
        raise ResultsStoreError(
            f"cannot read {path}: {exc.strerror}",
            "save the bundle to a file first: it is read twice (checked whole, then stored)",
        ) from exc
    except OSError as exc:
        raise ResultsStoreError(
            f"cannot read {path}: {exc.strerror or exc}", "give a bundle written by `results export`"
        ) from exc
    if size > MAX_BUNDLE_BYTES:
        handle.close()
        raise ResultsStoreError(
            f"{path} is {size} bytes, more than a bundle may be ({MAX_BUNDLE_BYTES})",
            "split it with `results export --since`",
        )
    with handle:
        number = 0
        while True:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            number += 1
            where = f"{path}, line {number}"
            if len(line) > MAX_LINE_BYTES:
                raise ResultsStoreError(
                    f"{where} is longer than {MAX_LINE_BYTES} bytes", "this is not a results bundle"
                )
            if not line.strip():
                continue
            try:
                data = json.loads(line.decode("utf-8"))
                if _depth(data) > MAX_DEPTH:
                    raise ValueError("nested deeper than a bundle is")
                if number == 1:
                    _check_header(data)
                    continue
                yield run_from_bundle(data)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise ResultsStoreError(
                    f"{where}: {exc}", "give a bundle written by `zluda-run results export`"
                ) from exc
        if number == 0:
            raise ResultsStoreError(f"{path} is empty", "give a bundle written by `zluda-run results export`")


def _check_header(data: Any) -> None:
    if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT:
        raise ValueError(f'not a results bundle (the first line has no "format": "{BUNDLE_FORMAT}")')
    version = data.get("version")
    if not isinstance(version, int) or version > BUNDLE_VERSION or version < 1:
        raise ValueError(
            f"bundle version {version!r} is not one this zluda-runner reads (1..{BUNDLE_VERSION})"
        )


def import_bundles(store: ResultsStore, paths: list[Path]) -> tuple[int, int]:
    """Merge bundles into the store; returns (runs added, runs already there).

    Each file is checked whole before any of it is stored, so a damaged bundle adds nothing.
    """
    added = skipped = 0
    for path in paths:
        for _ in read_bundle(path):
            pass
        batch: list[RunRecord] = []
        for run in read_bundle(path):
            batch.append(run)
            if len(batch) >= _BATCH:
                a, s = store.insert_runs(batch)
                added, skipped, batch = added + a, skipped + s, []
        if batch:
            a, s = store.insert_runs(batch)
            added, skipped = added + a, skipped + s
    return added, skipped
