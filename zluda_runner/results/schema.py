"""The results store's records and its schema, with ordered migrations.

One schema serves SQLite and PostgreSQL: plain ``TEXT``/``INTEGER``/``DOUBLE PRECISION``
columns, JSON kept as text, timestamps as ISO-8601 UTC strings (they sort as text).
A migration is a list of statements; ``schema_version`` holds one row per applied
migration, and a store applies the missing ones in order, inside one transaction that
holds the backend's write lock (so two processes opening a fresh store at once do not
both migrate it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.serial import JsonMixin, to_plain

# Kinds of run we record, and the item each row stands for.
KINDS = ("probe", "torch-ops", "trace", "ab", "verify-load", "doctor", "poc", "find")

# Bounds on what a run may hold (records built here, and bundles read from elsewhere).
MAX_ITEMS_PER_RUN = 100_000
MAX_TEXT = 4_000  # one detail / one argv word
MAX_NAME = 512  # an item's name
MAX_ARGV = 256  # words of a command kept
MAX_KEYS = 32  # keys of a run's host/release/target/summary, numbers of an item
MAX_KEY = 200  # the length of one such key
SUMMARY_TEXT_KEYS = ("verdict", "verdict_text", "load", "faster")  # summary fields that are text


class ResultsStoreError(ZludaRunnerError):
    """The results store cannot be opened, read or written."""


class NoResultsStoreError(ResultsStoreError):
    """A reader was pointed at a results store that does not exist (a missing or empty SQLite file);
    nothing was made there: only recording and importing make a store."""


class StoreBusyError(ResultsStoreError):
    """Another process held the store's lock (SQLite) or a row or lock (PostgreSQL) past the wait."""


class StoreUnreachableError(ResultsStoreError):
    """The results database server cannot be reached, or stopped answering."""


class StoreRefusedValueError(ResultsStoreError):
    """The results database refused a value of a write (PostgreSQL); nothing of it was stored."""


class ReadOnlyStoreError(ResultsStoreError):
    """The store can only be read here (its folder or file cannot be written): runs cannot be added."""


class ForeignDatabaseError(ResultsStoreError):
    """The file is a SQLite database of another program; nothing in it is changed."""


class StoreWriteFailedError(ResultsStoreError):
    """A write to the store failed for the disk (full, a file-size limit); what it held is kept."""


class BundleError(ResultsStoreError):
    """A results bundle cannot be read: ``problem`` says what, as a stable code (``not-a-file``,
    ``edited``, ``newer``, ``too-deep``, ``malformed``, ...), ``line`` where (None: the file); both are
    its ``details`` (the --json error's)."""

    def __init__(self, message: str, hint: str | None = None, *, problem: str = "malformed",
                 line: int | None = None) -> None:
        super().__init__(message, hint, details={"problem": problem, "line": line})
        self.problem = problem
        self.line = line


class BundleLineError(ValueError):
    """Why one line of a bundle is refused, with its ``problem`` code (see :class:`BundleError`)."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


@dataclass(frozen=True)
class ResultRow(JsonMixin):
    """One outcome inside a run: a probe case, a torch op, a traced function, a binding, a check, as a
    report gives it (``result_rows()``) and as the store keeps it. ``ok`` is True (counts as passing),
    False (failing) or None (neither: skipped, unavailable, a timing, a warning)."""

    item: str
    status: str
    ok: bool | None = None
    detail: str = ""
    numbers: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord(JsonMixin):
    """One recorded run; ``run_id`` is the SHA-256 of everything else (see :func:`content_id`)."""

    kind: str
    started_at: str
    host: dict[str, Any] = field(default_factory=dict)
    release: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    command: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    items: list[ResultRow] = field(default_factory=list)
    run_id: str = ""

    # --- derived values the store keeps in columns, for queries -------------------------
    @property
    def gfx(self) -> str:
        return str(self.host.get("gfx") or "unknown")

    @property
    def release_id(self) -> str:
        return str((self.release or {}).get("id") or "none")

    @property
    def torch_build(self) -> str:
        return torch_build(self.target)

    def count(self, key: str) -> int:
        """A summary count (passed, failed, total, items); 0 when the stored value is not a count."""
        return summary_count(self.summary, key)

    def content(self) -> dict[str, Any]:
        """``to_dict()`` without ``run_id``; the items (most of a run) built directly."""
        data: dict[str, Any] = to_plain({"kind": self.kind, "started_at": self.started_at,
                                         "host": self.host, "release": self.release, "target": self.target,
                                         "command": self.command, "summary": self.summary})
        data["items"] = [{"item": i.item, "status": i.status, "ok": i.ok, "detail": i.detail,
                          "numbers": {str(k): v for k, v in i.numbers.items()}} for i in self.items]
        return data


# A run's items as the store takes them, column by column: names, statuses, oks, details, numbers.
ItemColumns = tuple[Sequence[str], Sequence[str], Sequence["bool | None"], Sequence[str],
                    Sequence[Mapping[str, "float | None"]]]
NO_ITEMS: ItemColumns = ((), (), (), (), ())


def item_columns(items: Sequence[ResultRow]) -> ItemColumns:
    """Items as :data:`ItemColumns`."""
    if not items:
        return NO_ITEMS
    rows = ((i.item, i.status, i.ok, i.detail, i.numbers) for i in items)
    names, statuses, oks, details, numbers = zip(*rows, strict=True)
    return names, statuses, oks, details, numbers


@dataclass(frozen=True)
class RunRows:
    """A run as the store inserts it: ``head``, the run's record (whose own ``items`` are not read: an
    import leaves them empty), and ``items``, its items as columns. An import checks and stores a bundle's
    runs in this form, without a :class:`ResultRow` per item (:meth:`record` makes them)."""

    head: RunRecord
    items: ItemColumns

    @classmethod
    def of(cls, run: RunRecord) -> RunRows:
        return cls(run, item_columns(run.items))

    def record(self) -> RunRecord:
        """The whole run, its items as :class:`ResultRow`."""
        return replace(self.head, items=list(map(ResultRow, *self.items)))


COUNT_KEYS = ("passed", "failed", "total", "items")
MAX_COUNT = 10**9


def summary_count(summary: Mapping[str, object], key: str) -> int:
    value = summary.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        return 0
    return value


def torch_build(target: Mapping[str, object] | None) -> str:
    """``2.4.1+cu118`` (or ``2.4.1+cuda11``) for torch, the binary's name for another program, else ``-``."""
    target = target or {}
    version = target.get("torch_version")
    if version:
        major = target.get("cuda_major")
        if "+" in str(version) or major is None:
            return str(version)
        return f"{version}+cuda{major}"
    binary = target.get("binary")
    return str(binary) if binary else "-"


def clean_text(value: str) -> str:
    """Text both backends keep as it is: no NUL (PostgreSQL refuses it in text; U+FFFD instead) and
    valid UTF-8 (a non-UTF-8 argv word or path reaches Python as lone surrogates, which cannot be
    encoded: their bytes are kept as ``\\xNN``)."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = value.encode("utf-8", "replace")
        value = raw.decode("utf-8", "backslashreplace")
    return value


def clean(value: object) -> Any:
    """:func:`clean_text` over every string (and key) in plain JSON-like data."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def clean_run(run: RunRecord) -> RunRecord:
    """The run with only text both backends keep; the content id is recomputed when that changed it."""
    data = run.content()
    try:  # the common case, told from the canonical text: no NUL (written \u0000), valid UTF-8
        if "\\u0000" not in (text := canonical_json(data)) and text.encode("utf-8"):
            return run
    except ValueError:  # a lone surrogate (UnicodeEncodeError), a float JSON has not: the slow way
        pass
    cleaned = clean(data)
    if cleaned == data:
        return run
    out = RunRecord(
        kind=cleaned["kind"],
        started_at=cleaned["started_at"],
        host=cleaned["host"],
        release=cleaned["release"],
        target=cleaned["target"],
        command=cleaned["command"],
        summary=cleaned["summary"],
        items=[ResultRow(i["item"], i["status"], i["ok"], i["detail"], i["numbers"])
              for i in cleaned["items"]],
    )
    return replace(out, run_id=content_id(out))


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(data: object) -> str:
    return _CANONICAL.encode(data)


def content_id(run: RunRecord) -> str:
    """The stable id of a run: the same run recorded or imported twice has one id."""
    return id_of(canonical_json(run.content()))


def id_of(text: str) -> str:
    """The id of a run's canonical JSON text."""
    import hashlib  # here: a reader of the store never makes an id

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def summarise(items: list[ResultRow]) -> dict[str, int]:
    passed = sum(1 for i in items if i.ok is True)
    failed = sum(1 for i in items if i.ok is False)
    return {"passed": passed, "failed": failed, "total": passed + failed, "items": len(items)}


# --- migrations ---------------------------------------------------------------------------
# Never edit a released migration: append a new one. Each is portable SQL.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: runs and their items
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            started_at TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            host_json TEXT NOT NULL,
            release_json TEXT,
            target_json TEXT,
            command_json TEXT NOT NULL,
            summary_json TEXT NOT NULL,
            gfx TEXT NOT NULL,
            release_id TEXT NOT NULL,
            torch_build TEXT NOT NULL,
            passed INTEGER NOT NULL,
            failed INTEGER NOT NULL,
            verdict TEXT
        )""",
        """CREATE TABLE items (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            item TEXT NOT NULL,
            status TEXT NOT NULL,
            ok INTEGER,
            detail TEXT NOT NULL,
            numbers_json TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
    ),
    (  # 2: indexes for the matrix and the per-GPU queries
        "CREATE INDEX runs_by_gfx ON runs (gfx, release_id)",
        "CREATE INDEX runs_by_time ON runs (started_at)",
        "CREATE INDEX items_failing ON items (run_id, ok)",
    ),
    (  # 3: the matrix's index (its runs per cell ranked in index order: no sort, no row read), and the
        # failing items only (the 3 % the drill-down reads; an import no longer writes an entry per item)
        "CREATE INDEX runs_by_cell ON runs"
        " (release_id, gfx, torch_build, kind, started_at DESC, run_id DESC)",
        "DROP INDEX items_failing",
        "CREATE INDEX items_failing_only ON items (run_id, seq) WHERE ok = 0",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
)
