"""The results store: one class over SQLite or PostgreSQL, same schema, same migrations.

Backends differ only in how they connect, their parameter marker, how a write
transaction takes its lock, and which exceptions they raise; everything else
(migrations, inserts, queries) is written once here.
"""

from __future__ import annotations

import abc
import contextlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from zluda_runner.results.recordable import numbers_of, ok_value, text_of
from zluda_runner.results.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    VERSION_TABLE,
    ResultRow,
    ResultsStoreError,
    RunRecord,
    RunRows,
    summary_count,
)

# what a run's record is read from (list, show, export); the columns after them are derived from it, for the
# queries (the matrix)
RECORD_COLUMNS = "run_id, kind, started_at, host_json, release_json, target_json, command_json, summary_json"
RUN_COLUMNS = f"{RECORD_COLUMNS}, gfx, release_id, torch_build, passed, failed, verdict"
_HEX = re.compile(r"^[0-9a-f]{4,64}$")
_SINCE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?)?$")
_IN_CHUNK = 500  # ids per IN (...) list


def _json_writer() -> Callable[[object], str]:
    """``json.dumps(value, sort_keys=True)``, its C encoder made once (``JSONEncoder.encode`` makes one per
    call: half the time of an item's numbers); the plain encoder where there is no C one."""
    encoder = json.JSONEncoder(sort_keys=True)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return encoder.encode
    chunks = make(None, encoder.default, json.encoder.encode_basestring_ascii, None, ": ", ", ",
                  True, False, True)  # sort_keys, not skipkeys, allow_nan: as json.dumps(sort_keys=True)
    return lambda value: "".join(chunks(value, 0))


_sorted_json = _json_writer()
READABLE_FROM = 1  # the oldest schema whose tables the queries read (2 and 3 added only indexes)


def check_since(since: str | None) -> str | None:
    """``since`` as the prefix of a stored start time it is compared with (as text): a real date (and
    time), ``T`` between them, no ``Z`` (``...T10:00Z`` sorts after ``...T10:00:30.0Z``, which would
    leave out that minute's runs)."""
    if since is None:
        return None
    wrong = ResultsStoreError(
        f"{{opt:since}} {since!r} is not a date", "give YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)"
    )
    if not _SINCE.match(since):
        raise wrong
    since = since.replace(" ", "T").removesuffix("Z")
    day, _, clock = since.partition("T")
    clock = clock.split(".", 1)[0]
    try:  # 2026-02-30 or 25:00 match the pattern, and match no run
        datetime.strptime(day, "%Y-%m-%d")
        if clock:
            datetime.strptime(clock, "%H:%M:%S" if clock.count(":") == 2 else "%H:%M")
    except ValueError:
        raise wrong from None
    return since


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# A stored row: its columns' values, read and checked column by column by the store.
Row = Sequence[Any]


class Cursor(Protocol):
    """The part of a DB-API cursor both backends use (sqlite3's and psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, query: str, params: tuple[object, ...] = ..., /) -> object: ...

    def executemany(self, query: str, params: Iterable[tuple[object, ...]], /) -> object: ...

    def fetchone(self) -> Row | None: ...

    def fetchall(self) -> Sequence[Row]: ...

    def close(self) -> None: ...

    def __iter__(self) -> Iterator[Row]: ...


class Connection(Protocol):
    """The part of a DB-API connection the store uses (sqlite3's and psycopg's)."""

    def cursor(self) -> Cursor: ...

    def close(self) -> None: ...


def _loads(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:  # TypeError: a value that is not text at all
        raise ResultsStoreError(
            f"the results store holds an unreadable {what} ({exc})",
            "the store was changed by something else; export what you can and start a fresh one",
        ) from exc


class ResultsStore(abc.ABC):
    """A connection to one results store. Use as a context manager, or call :meth:`close`."""

    dialect = "?"

    def __init__(self, location: str) -> None:
        self.location = location
        self._conn: Connection | None = None
        self.may_create = True  # False for a reader: a store that is not there is not made (open())

    # --- what a backend provides ----------------------------------------------------------
    @abc.abstractmethod
    def _connect(self) -> Connection: ...

    @abc.abstractmethod
    def _begin_write(self, cur: Cursor, *, migrating: bool = False) -> None: ...

    def _guard(self) -> AbstractContextManager[None]:
        """Around each transaction: a bound on a server that stops answering (PostgreSQL)."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def _wrap_error(self, exc: Exception) -> ResultsStoreError | None:
        """A clear ResultsStoreError for a driver error, or None when ``exc`` is not one."""

    def _sql(self, sql: str) -> str:
        return sql

    def files(self) -> tuple[Path, ...]:
        """The files this store is kept in (none for a database server): nothing may be written over them."""
        return ()

    # --- plumbing -------------------------------------------------------------------------
    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def open(self, *, create: bool = True) -> ResultsStore:
        """Connect and bring the schema up to date. With ``create=False`` (a reader) a SQLite store that
        does not exist (no file, or an empty one) is not made: :class:`NoResultsStoreError`, and nothing
        was written (a database server's store is there or cannot be reached)."""
        self.may_create = create
        try:
            self._conn = self._connect()
            self.migrate()
        except Exception as exc:
            self.close()
            wrapped = self._wrap_error(exc)
            if wrapped is None:
                raise
            raise wrapped from exc
        return self

    @contextmanager
    def _tx(self, write: bool, *, migrating: bool = False) -> Iterator[Cursor]:
        if self._conn is None:
            raise ResultsStoreError("the results store is closed", "open it again")
        with self._guard():
            cur = self._conn.cursor()
            try:
                if write:
                    self._begin_write(cur, migrating=migrating)
                else:
                    cur.execute("BEGIN")
                yield cur
                cur.execute("COMMIT")
            except Exception as exc:
                with contextlib.suppress(Exception):  # the first error is the one worth reporting
                    cur.execute("ROLLBACK")
                wrapped = self._wrap_error(exc)
                if wrapped is None:
                    raise
                raise wrapped from exc
            finally:
                cur.close()

    def _exec(self, cur: Cursor, sql: str, params: Sequence[object] = ()) -> Cursor:
        cur.execute(self._sql(sql), tuple(params))
        return cur

    # --- schema ---------------------------------------------------------------------------
    def _version(self, cur: Cursor) -> int:
        row = self._exec(cur, "SELECT MAX(version) FROM schema_version").fetchone()
        value = row[0] if row else None
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isascii() and value.isdigit():
            return int(value)
        raise ResultsStoreError(
            f"the results store {self.location} has schema version {str(value)[:40]!r}, not a number: "
            "its schema_version table was changed by something other than zluda-runner",
            "point {opt:results_db} at another store, or move this one aside (nothing in it was changed)",
        )

    def _known(self, current: int) -> int:
        if current > SCHEMA_VERSION:
            raise ResultsStoreError(
                f"the results store {self.location} has schema version {current}, "
                f"newer than this zluda-runner knows ({SCHEMA_VERSION})",
                "upgrade zluda-runner, or point {opt:results_db} at another store",
            )
        return current

    def _has_version_table(self, cur: Cursor) -> bool:
        sql = ("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
               if self.dialect == "sqlite" else "SELECT to_regclass('schema_version') IS NOT NULL")
        row = self._exec(cur, sql).fetchone()
        return bool(row and row[0])

    def migrate(self) -> int:
        """Apply the missing migrations in order; returns the schema version. A store already up
        to date is only read (no write transaction: a read-only store opens, writers are not waited on)."""
        with self._tx(write=False) as cur:
            has_table = self._has_version_table(cur)
            current = self._version(cur) if has_table else 0
        if has_table and current >= SCHEMA_VERSION:
            return self._known(current)
        try:
            return self._migrate()
        except ResultsStoreError:
            if self.may_create or not has_table or current < READABLE_FROM:
                raise
            # a reader of an older store that cannot be brought up to date here (a read-only share, a file
            # it may not write): read it as it is, its tables are the ones read
            return current

    def _migrate(self) -> int:
        with self._tx(write=True, migrating=True) as cur:
            self._exec(cur, VERSION_TABLE)
            current = self._known(self._version(cur))
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version - 1]:
                    self._exec(cur, statement)
                self._exec(
                    cur,
                    "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
                    (version, now_iso()),
                )
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        with self._tx(write=False) as cur:
            return self._version(cur)

    # --- writing --------------------------------------------------------------------------
    def insert_runs(self, runs: Iterable[RunRecord]) -> tuple[int, int]:
        """Store runs that are not stored yet, in one transaction; returns (added, already there)."""
        return self.insert_rows([RunRows.of(run) for run in runs])

    def insert_rows(self, runs: Sequence[RunRows]) -> tuple[int, int]:
        """:meth:`insert_runs` of runs as an import has them (items as columns): in one transaction, the runs'
        rows by one prepared insert (:meth:`_insert_heads` says which were new), then the items of the new
        ones in one go (:meth:`_insert_items`)."""
        recorded_at = now_iso()
        with self._tx(write=True) as cur:
            new = self._insert_heads(cur, [_run_row(r.head, recorded_at) for r in runs])
            items = [row for run, added in zip(runs, new, strict=True) if added for row in _item_rows(run)]
            if items:
                self._insert_items(cur, items)
        return sum(new), len(new) - sum(new)

    def _insert_heads(self, cur: Cursor, rows: Sequence[tuple[object, ...]]) -> list[bool]:
        """Insert the runs' rows (:func:`_run_row`), each unless that run is stored already (or earlier in
        ``rows``); which ones were inserted. Here: one statement each, its row count says (SQLite: in the
        process, no round trip)."""
        new = []
        for row in rows:
            cur.execute(self._sql(INSERT_RUN), row)
            new.append(cur.rowcount == 1)
        return new

    def _insert_items(self, cur: Cursor, rows: Sequence[tuple[object, ...]]) -> None:
        """Insert items' rows (:func:`_item_rows`), none of them stored yet."""
        cur.executemany(self._sql(INSERT_ITEM), rows)

    def insert_run(self, run: RunRecord) -> bool:
        return self.insert_runs([run])[0] == 1

    # --- reading --------------------------------------------------------------------------
    def _run_from_row(self, row: Row) -> RunRecord:
        return RunRecord(
            run_id=text_of(row[0]),
            kind=text_of(row[1]),
            started_at=text_of(row[2]),
            host=_object(_loads(row[3], "host")) or {},
            release=_object(_loads(row[4], "release")),
            target=_object(_loads(row[5], "target")),
            command=[str(w) for w in words] if isinstance(words := _loads(row[6], "command"), list) else [],
            summary=_object(_loads(row[7], "summary")) or {},
        )

    def list_runs(
        self,
        *,
        since: str | None = None,
        kind: str | None = None,
        gfx: str | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        """Runs without their items, oldest first."""
        where: list[str] = []
        params: list[object] = []
        for column, value in (("kind", kind), ("gfx", gfx)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("started_at >= ?")
            params.append(since)
        sql = f"SELECT {RECORD_COLUMNS} FROM runs"  # noqa: S608 - only constant columns and '?' marks are formatted in
        if where:
            sql += " WHERE " + " AND ".join(where)
        if limit is not None and limit < 1:
            raise ResultsStoreError(f"limit {limit} is no number of runs", "give 1 or more")
        if limit is None:
            sql += " ORDER BY started_at, run_id"
        else:  # only the latest ``limit`` rows are read (a store of a million runs is not loaded for 50)
            sql += " ORDER BY started_at DESC, run_id DESC LIMIT ?"
            params.append(limit)
        with self._tx(write=False) as cur:
            rows = self._exec(cur, sql, params).fetchall()
        runs = [self._run_from_row(r) for r in rows]
        return runs if limit is None else runs[::-1]

    def run_ids(self, kind: str, since: str | None = None) -> list[str]:
        """The ids of the runs of ``kind`` (since a time), in no order."""
        sql, params = "SELECT run_id FROM runs WHERE kind = ?", [kind]
        if since is not None:
            sql += " AND started_at >= ?"
            params.append(since)
        with self._tx(write=False) as cur:
            return [text_of(r[0]) for r in self._exec(cur, sql, params).fetchall()]

    def cells(self, since: str | None = None) -> tuple[list[Row], list[Row]]:
        """The matrix, computed in the database: per (release, gfx, torch build) the number of runs and
        the latest start; and the latest run of each kind in each cell (the latest by start, then id,
        as :meth:`list_runs` orders them) with its counts and verdict."""
        where, params = ("WHERE started_at >= ?", (since,)) if since is not None else ("", ())
        counts = (f"SELECT release_id, gfx, torch_build, COUNT(*), MAX(started_at) FROM runs {where}"  # noqa: S608 - only constant SQL is formatted in
                  " GROUP BY release_id, gfx, torch_build")
        # a kind's latest run in a cell is the first of its runs in runs_by_cell: a run with none since is
        # none of that kind's since either
        latest = LATEST_OF_EACH_KIND + (" WHERE r.started_at >= ?" if since is not None else "")
        with self._tx(write=False) as cur:
            cells = list(self._exec(cur, counts, params).fetchall())
            rows = self._exec(cur, latest, params).fetchall()
        return cells, [(*r[:9], summary_count(_object(_loads(r[9], "summary")) or {}, "total")) for r in rows]

    def resolve_id(self, prefix: str) -> str:
        """The full id of the run whose id starts with ``prefix`` (at least 4 hex digits)."""
        prefix = prefix.strip().lower()
        if not _HEX.match(prefix):
            raise ResultsStoreError(
                f"{prefix!r} is not a run id",
                "give at least 4 hex digits of an id from {cmd:results list}",
            )
        with self._tx(write=False) as cur:
            rows = self._exec(
                cur, "SELECT run_id FROM runs WHERE run_id LIKE ? LIMIT 2", (prefix + "%",)
            ).fetchall()
        if not rows:
            raise ResultsStoreError(
                f"no run {prefix} in {self.location}", "{cmd:results list} shows the runs"
            )
        if len(rows) > 1:
            raise ResultsStoreError(f"run id {prefix} is ambiguous", "give more digits of the id")
        return str(rows[0][0])

    def get_runs(self, run_ids: Sequence[str], *, with_items: bool = True) -> list[RunRecord]:
        """The given runs (in the given order), with their items."""
        found: dict[str, RunRecord] = {}
        with self._tx(write=False) as cur:
            for chunk in _chunks(run_ids):
                marks = ", ".join("?" * len(chunk))
                for row in self._exec(
                    cur, f"SELECT {RECORD_COLUMNS} FROM runs WHERE run_id IN ({marks})", chunk  # noqa: S608 - only constant columns and '?' marks are formatted in
                ):
                    run = self._run_from_row(row)
                    found[run.run_id] = run
                if not with_items:
                    continue
                sql = (
                    "SELECT run_id, item, status, ok, detail, numbers_json FROM items"  # noqa: S608 - only constant columns and '?' marks are formatted in
                    f" WHERE run_id IN ({marks}) ORDER BY run_id, seq"
                )
                for row in self._exec(cur, sql, chunk).fetchall():
                    if (owner := found.get(text_of(row[0]))) is not None:
                        owner.items.append(_item_from_row(row[1:]))
        return [found[i] for i in run_ids if i in found]

    def get_run(self, prefix: str) -> RunRecord:
        return self.get_runs([self.resolve_id(prefix)])[0]

    def failing_items(self, run_ids: Sequence[str], per_run: int = 50) -> dict[str, list[ResultRow]]:
        """Up to ``per_run`` failing items of each run."""
        out: dict[str, list[ResultRow]] = {}
        with self._tx(write=False) as cur:
            for chunk in _chunks(run_ids):
                marks = ", ".join("?" * len(chunk))
                sql = (
                    "SELECT run_id, item, status, ok, detail, numbers_json FROM items"  # noqa: S608 - only constant columns and '?' marks are formatted in
                    f" WHERE ok = 0 AND run_id IN ({marks}) ORDER BY run_id, seq"
                )
                for row in self._exec(cur, sql, chunk).fetchall():
                    bucket = out.setdefault(text_of(row[0]), [])
                    if len(bucket) < per_run:
                        bucket.append(_item_from_row(row[1:]))
        return out

    def delete_run(self, run_id: str) -> str:
        """Remove one run and its items (the full id, from :meth:`resolve_id`); returns the id."""
        with self._tx(write=True) as cur:
            self._exec(cur, "DELETE FROM items WHERE run_id = ?", (run_id,))
            if self._exec(cur, "DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount != 1:
                raise ResultsStoreError(f"no run {run_id} in {self.location}",
                                        "{cmd:results list} shows them")
        return run_id


def _object(value: Any) -> dict[str, Any] | None:
    """A stored JSON object as read; anything else (a list, a number left by another tool) as none."""
    return value if isinstance(value, dict) else None


def _item_from_row(row: Row) -> ResultRow:
    return ResultRow(
        item=text_of(row[0]),
        status=text_of(row[1]),
        ok=ok_value(row[2]),
        detail=text_of(row[3]),
        numbers=numbers_of(_loads(row[4], "item")),
    )


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    ids = list(ids)
    for start in range(0, len(ids), _IN_CHUNK):
        yield ids[start : start + _IN_CHUNK]


INSERT_RUN = (f"INSERT INTO runs ({RUN_COLUMNS}, recorded_at) VALUES ({', '.join('?' * 15)})"  # noqa: S608 - only constant columns and '?' marks are formatted in
              " ON CONFLICT (run_id) DO NOTHING")
ITEM_COLUMNS = ("run_id", "seq", "item", "status", "ok", "detail", "numbers_json")
INSERT_ITEM = f"INSERT INTO items ({', '.join(ITEM_COLUMNS)}) VALUES ({', '.join('?' * 7)})"  # noqa: S608 - only constant columns and '?' marks are formatted in


def _run_row(run: RunRecord, recorded_at: str) -> tuple[object, ...]:
    """The ``runs`` row of a run (:data:`INSERT_RUN`'s values)."""
    summary = run.summary
    return (run.run_id, run.kind, run.started_at, _sorted_json(run.host),
            None if run.release is None else _sorted_json(run.release),
            None if run.target is None else _sorted_json(run.target),
            json.dumps(run.command), _sorted_json(summary), run.gfx, run.release_id, run.torch_build,
            run.count("passed"), run.count("failed"),
            verdict if isinstance(verdict := summary.get("verdict"), str) else None, recorded_at)


def _item_rows(run: RunRows) -> Iterator[tuple[object, ...]]:
    """The ``items`` rows of a run (:data:`INSERT_ITEM`'s values), built column by column."""
    names, statuses, oks, details, numbers = run.items
    return zip(itertools.repeat(run.head.run_id), itertools.count(), names, statuses,
               [None if ok is None else int(ok) for ok in oks], details, _numbers_texts(numbers))


def _numbers_texts(numbers: Sequence[Mapping[str, float | None]]) -> list[str]:
    """Each item's numbers as the store keeps them (``json.dumps(sort_keys=True)``). Encoded as one list,
    split where one item's object ends and the next begins, when ``}, {`` occurs only there (the count
    says: a name holding it has them encoded one by one); the encoder's text has no newline."""
    if len(numbers) > 1:
        text = _sorted_json(numbers)
        if text.count("}, {") == len(numbers) - 1:
            return text[1:-1].replace("}, {", "}\n{").split("\n")
    return [_sorted_json(n) for n in numbers]


_CELL_KIND = ("release_id", "gfx", "torch_build", "kind")
_FIRST_IN_CELL_ORDER = ("ORDER BY n.release_id, n.gfx, n.torch_build, n.kind, n.started_at DESC,"
                        " n.run_id DESC LIMIT 1")


def _after(depth: int) -> str:
    """The first run (in runs_by_cell's order) whose first ``depth`` cell columns are p's and whose next
    one comes after p's: one index seek."""
    same = [f"n.{c} = p.{c}" for c in _CELL_KIND[:depth]]
    where = " AND ".join([*same, f"n.{_CELL_KIND[depth]} > p.{_CELL_KIND[depth]}"])
    return f"(SELECT n.run_id FROM runs AS n WHERE {where} {_FIRST_IN_CELL_ORDER})"  # noqa: S608 - only constant SQL is formatted in


# The latest run of each kind in each cell, by a walk of runs_by_cell (release, gfx, torch build, kind, then
# latest first) that seeks from one (cell, kind) straight to the next: a seek per cell and kind, whatever the
# number of runs (ranking every run was a pass over all of them). p is where the walk is; the next is the same
# cell's next kind, else the next torch build, GPU target, release.
LATEST_OF_EACH_KIND = (
    "WITH RECURSIVE latest (run_id) AS ("  # noqa: S608 - only constant SQL is formatted in
    f" SELECT (SELECT n.run_id FROM runs AS n {_FIRST_IN_CELL_ORDER})"
    f" UNION ALL SELECT COALESCE({', '.join(_after(depth) for depth in (3, 2, 1, 0))})"
    " FROM latest JOIN runs AS p ON p.run_id = latest.run_id)"
    " SELECT r.release_id, r.gfx, r.torch_build, r.kind, r.run_id, r.started_at, r.passed, r.failed,"
    " r.verdict, r.summary_json FROM latest JOIN runs AS r ON r.run_id = latest.run_id"
)
