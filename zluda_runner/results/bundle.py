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
The header's ``runs`` is checked against the run lines that follow: a bundle cut short at a line's end
(a copy or download that stopped) is refused whole instead of imported in part.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import operator
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, BinaryIO

from zluda_runner.core.fsutil import NotRegularFileError, open_regular
from zluda_runner.results.recordable import number
from zluda_runner.results.schema import (
    COUNT_KEYS,
    KINDS,
    MAX_ARGV,
    MAX_COUNT,
    MAX_ITEMS_PER_RUN,
    MAX_KEY,
    MAX_KEYS,
    MAX_NAME,
    MAX_TEXT,
    NO_ITEMS,
    SCHEMA_VERSION,
    SUMMARY_TEXT_KEYS,
    BundleError,
    BundleLineError,
    ItemColumns,
    ResultRow,
    ResultsStoreError,
    RunRecord,
    RunRows,
    canonical_json,
    clean_run,
    id_of,
    item_columns,
    summary_count,
)
from zluda_runner.results.store import ResultsStore, check_since, now_iso
from zluda_runner.results.userfiles import open_output

BUNDLE_FORMAT = "zluda-runner-results"
BUNDLE_VERSION = 1
MAX_BUNDLE_BYTES = 1 << 30
MAX_LINE_BYTES = 16 << 20  # one run; a 100 000-item run of short items is ~15 MiB
KEEP_BYTES = 8 << 20  # bundle lines whose checked runs are kept for storing (more are read again)
BATCH_BYTES = 4 << 20  # runs are stored in batches of at most this many bundle bytes (or _BATCH runs)
MAX_DEPTH = 6
_BATCH = 200
_RUN_ID = re.compile(r"^[0-9a-f]{64}$")
_STARTED = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")
_RUN_FIELDS = frozenset(
    ("run_id", "kind", "started_at", "host", "release", "target", "command", "summary", "items")
)
_ITEM_FIELDS = frozenset(("item", "status", "ok", "detail", "numbers"))
_TEXT, _NUMBER = frozenset((str,)), frozenset((float, type(None)))  # the types of a number's name, its value
_DICT, _OK = frozenset((dict,)), frozenset((bool, type(None)))
_ITEM_VALUES = operator.itemgetter("item", "status", "ok", "detail", "numbers")
_not_none = functools.partial(operator.is_not, None)


def export_bundle(store: ResultsStore, path: Path, *, since: str | None = None) -> int:
    """Write the runs (since a date) to ``path`` (the one writer: never over the store's own files);
    returns how many."""
    runs = store.list_runs(since=check_since(since))
    with open_output(path, store.files(), what="the bundle", option="{cmd:results export}",
                     newline="\n") as out:
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
            got = store.get_runs(ids)
            if len(got) != len(ids):  # the header's count must stay true: an importer checks it
                raise ResultsStoreError(
                    f"{len(ids) - len(got)} of the runs listed for export could not be read back "
                    f"(deleted meanwhile, or changed by another program); {path} was not written",
                    "export again when the store is not being changed",
                )
            for run in got:
                out.write(canonical_json({"run": run.to_dict()}) + "\n")
    return len(runs)


def _too_deep(value: object) -> bool:
    """Whether lists and objects nest more than MAX_DEPTH deep (looked at one level at a time)."""
    layer = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_DEPTH):
        layer = [c for v in layer for c in (v.values() if isinstance(v, dict) else v)
                 if isinstance(c, dict | list)]
    return bool(layer)


def _text(value: object, what: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text")
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value)} characters, more than a run keeps ({limit})")
    return value


def _scalars(value: object, what: str, nullable: bool = False) -> dict[str, Any] | None:
    if value is None and nullable:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str | int | float | bool))
        for k, v in value.items()
    ):
        raise ValueError(f"{what} must be an object of plain values")
    if len(value) > MAX_KEYS:
        raise ValueError(f"{what} has {len(value)} keys, more than a run keeps ({MAX_KEYS})")
    for key, item in value.items():
        _text(key, f"a key of {what}", MAX_KEY)
        if isinstance(item, str):
            _text(item, f"{what} {key[:40]!r}")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{what} {key[:40]!r} must be a finite number")
    return value


def _summary(value: object) -> dict[str, Any]:
    """The summary's own fields have their types: counts are counts, texts are texts."""
    summary = _scalars(value, "summary") or {}
    for key in COUNT_KEYS:
        if key in summary and (isinstance(summary[key], bool) or summary_count(summary, key) != summary[key]):
            raise ValueError(f"summary {key} must be a count (0..{MAX_COUNT}), not {summary[key]!r}")
    for key in SUMMARY_TEXT_KEYS:
        if summary.get(key) is not None and not isinstance(summary[key], str):
            raise ValueError(f"summary {key} must be text, not {summary[key]!r}")
    if summary.get("agree") is not None and not isinstance(summary["agree"], bool):
        raise ValueError(f"summary agree must be true, false or null, not {summary['agree']!r}")
    code = summary.get("exit_code")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int) or abs(code) > 1 << 32):
        raise ValueError(f"summary exit_code must be a whole number, not {code!r}")
    return summary


def _items(given: list[object]) -> tuple[ItemColumns, bool]:
    """The items, checked, as columns, and whether each was written as the store keeps it (its five fields,
    its numbers floats: then the run's content is what the bundle says). Items as an export writes them
    (nearly all) are checked column by column, in C (:func:`_kept_columns`); the rest one by one, and told
    why."""
    columns = _kept_columns(given)
    if columns is not None:
        return columns, True
    rows: list[ResultRow] = []
    as_kept = True
    for data in given:
        if (type(data) is dict and type(item := data.get("item")) is str and len(item) <= MAX_NAME
                and type(status := data.get("status")) is str and len(status) <= MAX_NAME
                and type(detail := data.get("detail", "")) is str and len(detail) <= MAX_TEXT
                and ((ok := data.get("ok")) is None or ok is True or ok is False)
                and type(numbers := data.get("numbers", {})) is dict and len(numbers) <= MAX_KEYS
                and (not numbers or (_TEXT.issuperset(map(type, numbers))
                                     and max(map(len, numbers)) <= MAX_KEY
                                     and _NUMBER.issuperset(map(type, numbers.values()))
                                     and all(map(math.isfinite, filter(_not_none, numbers.values())))))):
            rows.append(ResultRow(item, status, ok, detail, numbers))
            as_kept = as_kept and data.keys() == _ITEM_FIELDS
        else:
            rows.append(_checked_item(data))
            as_kept = False
    return item_columns(rows), as_kept


def _kept_columns(given: list[object]) -> ItemColumns | None:
    """The items as columns when every one is as the store keeps it (exactly its five fields, each of its
    type and within its bound, its numbers finite floats or null), checked a column at a time; else None."""
    if not given:
        return NO_ITEMS
    if not (_DICT.issuperset(map(type, given))
            and all(map(operator.eq, map(dict.keys, given), itertools.repeat(_ITEM_FIELDS)))):  # type: ignore[arg-type]
        return None
    names, statuses, oks, details, numbers = zip(*map(_ITEM_VALUES, given), strict=True)  # type: ignore[arg-type]
    if not (_TEXT.issuperset(map(type, names)) and max(map(len, names)) <= MAX_NAME
            and _TEXT.issuperset(map(type, statuses)) and max(map(len, statuses)) <= MAX_NAME
            and _TEXT.issuperset(map(type, details)) and max(map(len, details)) <= MAX_TEXT
            and _OK.issuperset(map(type, oks))
            and _DICT.issuperset(map(type, numbers)) and max(map(len, numbers)) <= MAX_KEYS):
        return None
    keys = list(itertools.chain.from_iterable(numbers))
    values = list(itertools.chain.from_iterable(map(dict.values, numbers)))
    if keys and not (_TEXT.issuperset(map(type, keys)) and max(map(len, keys)) <= MAX_KEY
                     and _NUMBER.issuperset(map(type, values))
                     and all(map(math.isfinite, filter(_not_none, values)))):
        return None
    return names, statuses, oks, details, numbers


def _checked_item(data: object) -> ResultRow:
    if not isinstance(data, dict):
        raise ValueError("an item must be an object")
    item, status, ok, detail = data.get("item"), data.get("status"), data.get("ok"), data.get("detail", "")
    numbers = data.get("numbers", {})
    if not isinstance(item, str) or not isinstance(status, str) or not isinstance(detail, str):
        raise ValueError("an item needs string item/status/detail")
    _text(item, "an item's name", MAX_NAME)
    _text(status, f"item {item[:40]!r}'s status", MAX_NAME)
    _text(detail, f"item {item[:40]!r}'s detail")
    if isinstance(numbers, dict) and len(numbers) > MAX_KEYS:
        raise ValueError(f"item {item[:40]!r} has {len(numbers)} numbers, more than a run keeps ({MAX_KEYS})")
    if isinstance(numbers, dict):
        for key in numbers:
            _text(key, f"a number's name in item {item[:40]!r}", MAX_KEY)
    if ok is not None and not isinstance(ok, bool):
        raise ValueError("an item's ok must be true, false or null")
    if not isinstance(numbers, dict) or not all(v is None or number(v) is not None for v in numbers.values()):
        raise ValueError("an item's numbers must be finite numbers or null")
    return ResultRow(
        item, status, ok, detail, {str(k): None if v is None else float(v) for k, v in numbers.items()}
    )


def _started_at(value: object) -> str:
    """An ISO-8601 UTC time as zluda-runner writes it, not in the future (a day's clock skew allowed):
    runs sort by it, so 'zzz' or the year 9999 would stay the latest run forever."""
    if not isinstance(value, str) or not _STARTED.match(value):
        raise ValueError(f"started_at {str(value)[:40]!r} is not a time as zluda-runner writes it"
                         " (YYYY-MM-DDTHH:MM:SS[.ffffff]Z, UTC)")
    try:  # the pattern matched: the ISO reader (in C) reads it
        when = datetime.fromisoformat(value[:19]).replace(tzinfo=timezone.utc)
    except ValueError as exc:
        raise ValueError(f"started_at {value!r} is not a real time ({exc})") from None
    if when > datetime.now(timezone.utc) + timedelta(days=1):
        raise ValueError(f"started_at {value} is in the future")
    return value


def run_from_bundle(data: object, schema: int | None = None) -> RunRecord:
    """A run from its bundle object, checked field by field and against its id (raises ValueError).
    ``schema``: the store schema the bundle's header says it was written with."""
    return check_run(data, schema).record()


def check_run(data: object, schema: int | None = None) -> RunRows:
    """:func:`run_from_bundle`, the run as the store inserts it (its items as columns: an import makes no
    object per item)."""
    if not isinstance(data, dict) or not isinstance(data.get("run"), dict):
        raise ValueError('expected {"run": {...}}')
    raw = data["run"]
    newer = _newer(schema, raw)
    if raw.get("kind") not in KINDS:
        raise ValueError(f"unknown kind {str(raw.get('kind'))[:40]!r}" + newer)
    if not isinstance(raw.get("run_id"), str) or not _RUN_ID.match(raw["run_id"]):
        raise ValueError("run_id must be 64 hex digits")
    _started_at(raw.get("started_at"))
    command = raw.get("command", [])
    if not isinstance(command, list) or not all(isinstance(w, str) for w in command):
        raise ValueError("command must be a list of strings")
    if len(command) > MAX_ARGV:
        raise ValueError(f"command has {len(command)} words, more than a run keeps ({MAX_ARGV})")
    for word in command:
        _text(word, "a command word")
    items = raw.get("items", [])
    if not isinstance(items, list) or len(items) > MAX_ITEMS_PER_RUN:
        raise ValueError(f"items must be a list of at most {MAX_ITEMS_PER_RUN}")
    columns, as_kept = _items(items)
    if raw["kind"] == "find":
        _check_locks(columns)
    head = RunRecord(
        kind=raw["kind"],
        started_at=raw["started_at"],
        host=_scalars(raw.get("host", {}), "host") or {},
        release=_scalars(raw.get("release"), "release", nullable=True),
        target=_scalars(raw.get("target"), "target", nullable=True),
        command=command,
        summary=_summary(raw.get("summary", {})),
        run_id=raw["run_id"],
    )
    run = RunRows(head, columns)
    # every field there and every item as kept (checked above: plain values): the content is the run's
    # own object without its id, not made again
    content = ({k: v for k, v in raw.items() if k != "run_id"} if as_kept and raw.keys() == _RUN_FIELDS
               else run.record().content())
    text = canonical_json(content)  # a lone surrogate cannot be encoded: ValueError, a bad line
    if id_of(text) != head.run_id:
        if newer:
            raise BundleLineError("run_id does not match the run's content as this zluda-runner reads it"
                                  + newer, "newer")
        raise BundleLineError("run_id does not match the run's content (edited or damaged after export)",
                              "edited")
    # a NUL (written \u0000) another store kept becomes U+FFFD here (and the id follows)
    return RunRows.of(clean_run(run.record())) if "\\u0000" in text else run


def _check_locks(items: ItemColumns) -> None:
    """A find run's lock (its ``lock`` item) is data a later ``find --from`` reads: validated as a lock is
    (the field at fault named), so that a bundle with a bad one is refused at import."""
    from zluda_runner.core.errors import LockError
    from zluda_runner.release.lockfile import SHARED_ITEM, lock_from_shared

    names, _, _, details, _ = items
    for name, detail in zip(names, details, strict=True):
        if name == SHARED_ITEM:
            try:
                lock_from_shared(detail, "the run's lock item")
            except LockError as exc:
                raise ValueError(exc.raw_message) from None


def _newer(schema: int | None, raw: Mapping[str, object]) -> str:
    """What to say when a run may come from a newer zluda-runner (a higher schema, fields unknown here)."""
    unknown = sorted(set(raw) - _RUN_FIELDS)
    if schema is not None and schema > SCHEMA_VERSION:
        return (f": the bundle was written by a newer zluda-runner (store schema {schema}; this one knows"
                f" {SCHEMA_VERSION}); upgrade zluda-runner to import it")
    if unknown:
        names = ", ".join(k[:40] for k in unknown[:5])
        return (f": the run has fields this zluda-runner does not know ({names});"
                " written by a newer zluda-runner? upgrade to import it")
    return ""


def read_bundle(path: Path) -> Iterator[RunRecord]:
    """The runs in a bundle, checked; a bad bundle raises ResultsStoreError naming the line."""
    path = Path(path)
    with _open_bundle(path) as handle:
        for run, _size in _runs_in(handle, path):
            yield run.record()


def _open_bundle(path: Path) -> BinaryIO:
    """The bundle file, open; a FIFO or pipe is refused at once (a bundle is read twice), and a
    file larger than a bundle may be."""
    try:
        handle = open_regular(path)
        size = os.fstat(handle.fileno()).st_size
    except NotRegularFileError as exc:
        raise BundleError(
            f"cannot read {path}: {exc.strerror}",
            "save the bundle to a file first: it is read twice (checked whole, then stored)",
            problem="not-a-file",
        ) from exc
    except OSError as exc:
        raise ResultsStoreError(
            f"cannot read {path}: {exc.strerror or exc}", "give a bundle written by {cmd:results export}"
        ) from exc
    if size > MAX_BUNDLE_BYTES:
        handle.close()
        raise ResultsStoreError(
            f"{path} is {size} bytes, more than a bundle may be ({MAX_BUNDLE_BYTES})",
            "split it with {cmd:results export --since}",
        )
    return handle


def _runs_in(handle: BinaryIO, path: Path) -> Iterator[tuple[RunRows, int]]:
    """The runs from ``handle``'s start with the size of the line each came from, one line in memory
    at a time; at most MAX_BUNDLE_BYTES are read (a file that grows while it is read, or says its size
    is 0 as /proc does, is bounded too)."""
    handle.seek(0)
    number = read = total = 0
    schema: int | None = None
    expected: int | None = None
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            break
        number += 1
        total += len(line)
        where = f"{path}, line {number}"
        if total > MAX_BUNDLE_BYTES:
            raise ResultsStoreError(f"{where}: the bundle grew past {MAX_BUNDLE_BYTES} bytes as it was read",
                                    "split it with {cmd:results export --since}")
        if len(line) > MAX_LINE_BYTES:
            raise ResultsStoreError(
                f"{where} is longer than {MAX_LINE_BYTES} bytes", "this is not a results bundle"
            )
        if not line.strip():
            if number == 1:
                raise ResultsStoreError(f"{where} is blank: a bundle's first line is its header",
                                        "give a bundle written by {cmd:results export}")
            continue
        data: object = None
        try:  # a byte-order mark (a Windows editor that saved the bundle) is no part of the header
            data = json.loads(line.decode("utf-8-sig" if number == 1 else "utf-8"))
            if number == 1:
                if _too_deep(data):
                    raise BundleLineError("nested deeper than a bundle is", "too-deep")
                schema, expected = _check_header(data)
                continue
            run = check_run(data, schema)  # what it keeps is checked shallow, field by field
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            # a run line nested too deep is refused as that (what a run keeps is checked shallow)
            deep = number > 1 and _too_deep(data)
            reason = "nested deeper than a bundle is" if deep else exc
            problem = "too-deep" if deep else getattr(exc, "problem", "malformed")
            raise BundleError(f"{where}: {reason}", "give a bundle written by {cmd:results export}",
                              problem=problem, line=number) from exc
        read += 1
        if expected is not None and read > expected:
            raise ResultsStoreError(
                f"{where}: the bundle holds more runs than its header says ({expected}): lines were "
                "added after export",
                "give the bundle as {cmd:results export} wrote it",
            )
        yield run, len(line)
    if number == 0:
        raise ResultsStoreError(f"{path} is empty", "give a bundle written by {cmd:results export}")
    if expected is not None and read < expected:
        raise ResultsStoreError(
            f"{path} holds {read} of the {expected} runs its header says: the bundle was cut short "
            "(a copy or download that stopped); nothing of it was stored",
            "copy or download the bundle again, whole (or export it again with {cmd:results export})",
        )


def _check_header(data: object) -> tuple[int | None, int | None]:
    """Checks the header line; returns the store schema it names and the number of runs it says
    follow (each None when it names none)."""
    if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT:
        raise ValueError(f'not a results bundle (the first line has no "format": "{BUNDLE_FORMAT}")')
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > BUNDLE_VERSION:
        raise BundleLineError(f"bundle version {version} was written by a newer zluda-runner (this one"
                              f" reads 1..{BUNDLE_VERSION}); upgrade zluda-runner to import it", "newer")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(
            f"bundle version {str(version)[:20]!r} is not one this zluda-runner reads (1..{BUNDLE_VERSION})"
        )
    schema = data.get("schema")
    runs = data.get("runs")
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 0):
        raise ValueError(f"the header's runs {str(runs)[:20]!r} is not a count of runs")
    return schema if isinstance(schema, int) and not isinstance(schema, bool) else None, runs


def import_bundles(store: ResultsStore, paths: list[Path]) -> tuple[int, int]:
    """Merge bundles into the store; returns (runs added, runs already there).

    Every file is checked whole before any of them is stored (:func:`checked_bundles`), so a damaged
    bundle adds nothing, not even the runs of the files given before it.
    """
    with checked_bundles(paths) as bundles:
        return store_bundles(store, bundles)


# A checked bundle: its path, its open file, and its runs as checked while they fit in KEEP_BYTES
Checked = tuple[Path, BinaryIO, list[tuple[RunRows, int]] | None]


@contextmanager
def checked_bundles(paths: Iterable[Path]) -> Iterator[list[Checked]]:
    """Each bundle open and checked whole, for :func:`store_bundles`: a bad one raises ResultsStoreError
    before any is stored (and before a store is opened, or made, for them). The runs checked are kept
    while all bundles' lines so far add up to KEEP_BYTES (a larger bundle is read again, run by run)."""
    with ExitStack() as stack:
        bundles: list[Checked] = []
        room = KEEP_BYTES
        for path in map(Path, paths):
            handle = stack.enter_context(_open_bundle(path))
            kept: list[tuple[RunRows, int]] | None = []
            for run, size in _runs_in(handle, path):
                room -= size
                if kept is not None and room >= 0:
                    kept.append((run, size))
                else:
                    kept = None
            bundles.append((path, handle, kept))
        yield bundles


def store_bundles(store: ResultsStore, bundles: Iterable[Checked]) -> tuple[int, int]:
    """Store the runs of bundles :func:`checked_bundles` checked: those it kept, else the open files read
    again, so what was checked is what is stored, even when a name is given another file meanwhile."""
    added = skipped = 0
    for path, handle, kept in bundles:
        batch: list[RunRows] = []
        held = 0
        runs = kept if kept is not None else _runs_in(handle, path)
        for run, size in runs:  # stored in batches bounded by count and by bytes
            batch.append(run)
            held += size
            if len(batch) >= _BATCH or held >= BATCH_BYTES:
                a, s = store.insert_rows(batch)
                added, skipped, batch, held = added + a, skipped + s, [], 0
        if batch:
            a, s = store.insert_rows(batch)
            added, skipped = added + a, skipped + s
    return added, skipped
