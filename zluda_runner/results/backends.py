"""The two backends of the results store, and how a URL picks one.

* SQLite (default): ``<cache>/results.db``, WAL mode so readers never wait for the one
  writer; a write transaction starts with ``BEGIN IMMEDIATE`` and waits up to
  ``BUSY_TIMEOUT_MS`` for another process's write, so concurrent recorders queue
  instead of failing, and then fail (a recording turns that into a warning).
* PostgreSQL: ``postgresql://user@host/db`` (or ``?host=/socket/dir``), through
  psycopg 3. Only migrations take a (transaction-level advisory) lock; inserts rely on
  ``ON CONFLICT``. Every wait is bounded: ``connect_timeout``, ``lock_timeout`` and
  ``statement_timeout`` on the server, and a client-side watchdog that drops the
  connection when a stalled server does not answer within ``STALL_S`` (a recording then warns and
  the run moves on). A password holding ``@`` is the URL's real userinfo (up to the last ``@``),
  encoded for libpq, and masked in the driver's words too.

Opening a store whose schema is current takes no lock at all, on either backend.

The URL comes from ``--results-db`` on ``zluda-run results``, else the environment
variable ``ZLUDA_RUNNER_RESULTS_DB``, else the SQLite file in the cache folder.

A SQLite URL is read as SQLAlchemy reads it: ``sqlite:///results.db`` is ``results.db`` in the
current folder, ``sqlite:////srv/results.db`` the absolute path; a plain path works too. An in-memory
store (``:memory:``) keeps nothing and is refused, as is a path that is not a regular file (a device,
a FIFO, a folder), and a SQLite database of another program (tables, none of them ``schema_version``),
which is left as it was. A store whose folder cannot be written (a read-only mount, a shared folder) is
opened read-only: it can be listed and shown, not added to.

Only recording and importing make a store. A reader (list, show, diff, matrix, export, delete) never
does: a store it is pointed at (``--results-db``, ``Options(results_db=...)`` or
``ZLUDA_RUNNER_RESULTS_DB``) that is not there (no file, or an empty one) is an error naming the path,
and nothing is written (no file, no ``-wal``/``-shm``); the default store before anything was recorded
reads as empty (:func:`open_reader`), still without being made.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from zluda_runner.core.fsutil import file_kind
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.redact import redact_text, redact_url, userinfo
from zluda_runner.core.settings import Settings
from zluda_runner.results.schema import (
    ForeignDatabaseError,
    NoResultsStoreError,
    ReadOnlyStoreError,
    ResultsStoreError,
    StoreBusyError,
    StoreRefusedValueError,
    StoreUnreachableError,
    StoreWriteFailedError,
)
from zluda_runner.results.store import INSERT_RUN, ITEM_COLUMNS, Connection, Cursor, ResultsStore

if TYPE_CHECKING:
    import psycopg

RESULTS_DB_ENV = "ZLUDA_RUNNER_RESULTS_DB"
BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10  # PostgreSQL: the connection and its start-up (psycopg's own bound)
LOCK_TIMEOUT_MS = 5_000  # PostgreSQL: a row or the migration lock held by another session
STATEMENT_TIMEOUT_MS = 10_000  # PostgreSQL: one statement, bounded by the server
# PostgreSQL, client-side: a set-up or transaction the server has not answered in this long (stopped,
# wedged, a server that completes start-up and then says nothing) is dropped: an error for a reader, a
# warning for a recording, never a wait of minutes
STALL_S = 15.0
WAL_SWITCH_TRIES = 60  # about 25 s of waiting in all
_MIGRATION_LOCK = 0x7A6C7564  # "zlud": the advisory lock id migrations hold on PostgreSQL


def _switch_to_wal(conn: sqlite3.Connection) -> Any:
    """``PRAGMA journal_mode = WAL``, retried: on a fresh file, two processes switching at once get
    SQLITE_BUSY at once (SQLite does not wait in its busy handler there), so wait here, bounded."""
    delay = 0.01
    for _ in range(WAL_SWITCH_TRIES):
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
    return conn.execute("PRAGMA journal_mode = WAL").fetchone()


# A store's tables and views: a newer zluda-runner may add some, but every store has schema_version from
# its first migration on (made in the same transaction as the others).
_FOREIGN_SQL = ("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")


def _refuse_foreign(conn: sqlite3.Connection, path: Path, *, may_create: bool = True) -> None:
    """A SQLite database of another program (tables, none of them ``schema_version``) is no results
    store: nothing may be done to it, not even the switch to WAL (it stays in the file). For a reader
    (``may_create`` False) one with no tables at all (an empty file) is no store yet: it is left as it is."""
    names = [str(row[0]) for row in conn.execute(_FOREIGN_SQL).fetchall()]  # a read: busy_timeout waits
    if not names and not may_create:
        raise _no_store(path, empty=True)
    if not names or "schema_version" in names:
        return
    shown = ", ".join(n[:40] for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise ForeignDatabaseError(
        f"{path} is a SQLite database of another program (its tables: {shown}), not a zluda-runner "
        "results store; nothing in it was changed",
        "give {opt:results_db} / ZLUDA_RUNNER_RESULTS_DB another file (a new name makes a new store)",
    )


def _no_store(path: Path, *, empty: bool = False) -> NoResultsStoreError:
    full = os.path.abspath(path)
    shown = f"{path} ({full})" if str(path) != full else str(path)
    if os.path.islink(path):  # a link to nothing: say where it points
        shown = f"{path} (a symbolic link to {os.readlink(path)}, which is not there)"
    what = f"{shown} is an empty file, not a results store" if empty else f"no results store at {shown}"
    return NoResultsStoreError(
        f"{what}; nothing was made or changed there (reading a store never makes one)",
        "check the path given to {opt:results_db} / ZLUDA_RUNNER_RESULTS_DB; a store is made when a run "
        "is first recorded ({cmd:probe}, {cmd:doctor}, {cmd:ab} ...) or by {cmd:results import}",
    )


def _not_a_store_file(path: Path) -> ResultsStoreError | None:
    """A path that exists and is not a regular file (a device, a FIFO, a folder) is no SQLite store;
    SQLite must not even open it (a FIFO blocks, a device is overwritten or read as garbage)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return ResultsStoreError(
        f"the results store {path} is {file_kind(mode)}, not a results database file; nothing was changed",
        "give {opt:results_db} / ZLUDA_RUNNER_RESULTS_DB the path of a file (a new name makes a new store)",
    )


class SQLiteStore(ResultsStore):
    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path
        self.read_only = False

    def files(self) -> tuple[Path, ...]:
        return (self.path, *(Path(f"{self.path}{suffix}") for suffix in ("-wal", "-shm", "-journal")))

    def _connect(self) -> Connection:
        refused = _not_a_store_file(self.path)
        if refused is not None:
            raise refused
        if not self.may_create and not os.path.exists(self.path):  # nothing there, or a link to nothing
            raise _no_store(self.path)
        try:
            return self._connect_read_write()
        except (sqlite3.OperationalError, OSError) as exc:
            writable = os.access(self.path.parent, os.W_OK) and os.access(self.path, os.W_OK)
            if not self.path.is_file() or (writable and "readonly" not in str(exc)):
                raise
            # a read-only folder, or a read-only file (one not in WAL mode cannot be switched to it): what
            # is there can still be read
            return self._connect_read_only()

    def _connect_read_write(self) -> sqlite3.Connection:
        if self.may_create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        else:  # mode=rw: a file gone since the check above is not made either
            conn = sqlite3.connect(f"{Path(os.path.abspath(self.path)).as_uri()}?mode=rw", uri=True,
                                   timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _refuse_foreign(conn, self.path, may_create=self.may_create)
            mode = _switch_to_wal(conn)
            if not mode or str(mode[0]).lower() != "wal":
                raise ResultsStoreError(
                    f"the results store {self.path} could not switch to WAL mode (got {mode and mode[0]})",
                    "put the cache folder on a local file system ({opt:cache_dir} / ZLUDA_RUNNER_CACHE)",
                )
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except Exception:
            conn.close()
            raise
        return conn

    def _connect_read_only(self) -> sqlite3.Connection:
        """``mode=ro``; a WAL store whose ``-shm`` cannot be made in the folder needs ``immutable=1``
        (nothing can write there anyway)."""
        uri = Path(os.path.abspath(self.path)).as_uri()
        last: Exception | None = None
        for query in ("mode=ro", "mode=ro&immutable=1"):
            conn = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None)
            try:
                _refuse_foreign(conn, self.path, may_create=self.may_create)
            except sqlite3.Error as exc:
                conn.close()
                last = exc
                continue
            except BaseException:
                conn.close()
                raise
            self.read_only = True
            return conn
        assert last is not None
        raise last

    def _begin_write(self, cur: Cursor, *, migrating: bool = False) -> None:
        if self.read_only:
            raise self._read_only_error()
        cur.execute("BEGIN IMMEDIATE")

    def _read_only_error(self) -> ResultsStoreError:
        return ReadOnlyStoreError(
            f"the results store {self.path} can only be read here (its folder or file cannot be "
            "written): runs can be listed, not added; nothing was changed",
            "give {opt:results_db} / ZLUDA_RUNNER_RESULTS_DB a store in a folder you can write",
        )

    def _wrap_error(self, exc: Exception) -> ResultsStoreError | None:
        if isinstance(exc, ResultsStoreError):
            return exc
        if not self.may_create and not os.path.exists(self.path):  # removed while a reader opened it
            return _no_store(self.path)
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return StoreBusyError(
                f"the results store {self.path} stayed locked by another process ({exc})",
                "another zluda-run is writing to it; try again when it finishes",
            )
        if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
            return self._read_only_error()
        if isinstance(exc, sqlite3.DatabaseError | OSError):
            refused = _not_a_store_file(self.path) or self._not_its_content(exc)
            if refused is not None:
                return refused
            import shlex  # here: only this hint quotes

            quoted = shlex.quote(str(self.path))
            return ResultsStoreError(
                f"the results store {self.path} is unusable: {exc}",
                f"move it aside (mv {quoted} {shlex.quote(str(self.path) + '.bad')}) and a fresh store is "
                "made on the next run",
            )
        return None

    def _not_its_content(self, exc: Exception) -> ResultsStoreError | None:
        """An error of the disk or the path, not of what the store holds: no advice to move it aside
        (a store that does not exist, or one a full disk stopped a write to, is not unusable)."""
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("disk I/O error" in text or "disk is full" in text):
            return StoreWriteFailedError(
                f"the results store {self.path} could not be written ({text}): a full disk or a file-size "
                "limit does this; the write that failed stored nothing, and what the store held before is"
                " kept",
                "free space on that disk (or raise the file-size limit), then run it again",
            )
        if isinstance(exc, OSError) or "unable to open database file" in text:
            reason = text
            if isinstance(exc, OSError):  # making its folder failed: say which path, as the OS did
                reason = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else text
            if self.path.is_file():
                return ResultsStoreError(
                    f"cannot open the results store {self.path}: {reason}",
                    "check that you may read and write it and its folder",
                )
            return ResultsStoreError(
                f"cannot make the results store {self.path}: {reason}",
                "give {opt:results_db} / ZLUDA_RUNNER_RESULTS_DB a path in a folder you can write",
            )
        return None


class PostgresStore(ResultsStore):
    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        super().__init__(redact_url(url))
        self.url = url
        self._fileno: Callable[[], int] | None = None  # the open connection's socket

    def _connect(self) -> Connection:
        try:
            import psycopg
        except ImportError as exc:  # the driver is an extra: zluda-runner[postgres]
            raise ResultsStoreError(
                f"a PostgreSQL results store ({redact_url(self.url)}) needs the PostgreSQL driver "
                "(psycopg 3), which is not installed",
                "pip install 'zluda-runner[postgres]' (or 'psycopg[binary]') into the interpreter that runs "
                "zluda-run; or use a SQLite store (a file path)",
            ) from exc
        split = userinfo(self.url)  # libpq ends the userinfo at its first '@': give it the real one
        url = self.url if split is None else split[0] + split[1].replace("@", "%40") + split[2]
        conn = psycopg.connect(url, autocommit=True, connect_timeout=max(2, int(CONNECT_TIMEOUT_S)))
        self._fileno = conn.fileno
        try:
            with self._watchdog(conn.fileno):
                conn.execute(
                    "SELECT set_config('lock_timeout', %s, false),"
                    " set_config('statement_timeout', %s, false)",
                    (f"{int(LOCK_TIMEOUT_MS)}ms", f"{int(STATEMENT_TIMEOUT_MS)}ms"),
                )
        except Exception:
            conn.close()
            raise
        return conn

    @contextmanager
    def _watchdog(self, fileno: Callable[[], int] | None) -> Iterator[None]:
        """Drop the connection when the server answers nothing for ``STALL_S`` (statement_timeout
        runs in the server, so a stopped server never sends it): the blocked read then fails."""
        import socket  # here: a SQLite store does not pay for them
        import threading

        def drop() -> None:
            if fileno is None:
                return
            try:
                sock = socket.socket(fileno=os.dup(fileno()))
            except Exception:  # closed meanwhile (psycopg raises its own error then): nothing to drop
                return
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            finally:
                sock.close()

        timer = threading.Timer(STALL_S, drop)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _guard(self) -> AbstractContextManager[None]:
        return self._watchdog(self._fileno if self._conn is not None else None)

    def _begin_write(self, cur: Cursor, *, migrating: bool = False) -> None:
        cur.execute("BEGIN")
        if migrating:  # inserts need no lock: ON CONFLICT (run_id) DO NOTHING settles a race
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def _insert_heads(self, cur: Cursor, rows: Sequence[tuple[object, ...]]) -> list[bool]:
        """All the runs' rows in one round trip (psycopg pipelines ``executemany``); the row each insert
        returns says it was new (its result is empty when the run was there, or was inserted by another
        session meanwhile: ``ON CONFLICT`` waited for it)."""
        if not rows:
            return []
        pg = cast("psycopg.Cursor[Any]", cur)
        pg.executemany(self._sql(INSERT_RUN) + " RETURNING run_id", rows, returning=True)
        new = [pg.fetchone() is not None]
        while pg.nextset():
            new.append(pg.fetchone() is not None)
        return new

    def _insert_items(self, cur: Cursor, rows: Sequence[tuple[object, ...]]) -> None:
        """The items by ``COPY``: one stream, no statement per row."""
        pg = cast("psycopg.Cursor[Any]", cur)
        with pg.copy(f"COPY items ({', '.join(ITEM_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _wrap_error(self, exc: Exception) -> ResultsStoreError | None:
        if isinstance(exc, ResultsStoreError):
            return exc
        try:
            import psycopg
        except ImportError:  # pragma: no cover
            return None
        said = redact_text(str(exc).strip(), self.url)  # the driver's words may quote a password's tail
        if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.QueryCanceled):
            return StoreBusyError(
                f"the results database {self.location} kept us waiting: {said}",
                "another session holds the store (a stalled writer?); try again when it finishes",
            )
        if isinstance(exc, psycopg.OperationalError):
            return StoreUnreachableError(
                f"cannot reach the results database {self.location}: {said}",
                "check the URL given to {opt:results_db} / ZLUDA_RUNNER_RESULTS_DB and that the server runs"
                " (and answers)",
            )
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return ResultsStoreError(
                f"the results database {self.location} refused a request: {said}",
                "check that the database user may create tables there and write to them",
            )
        if isinstance(exc, psycopg.DataError):
            return StoreRefusedValueError(
                f"the results database {self.location} refused a value: {said}",
                "a value PostgreSQL cannot keep reached it; nothing of this write was stored",
            )
        if isinstance(exc, psycopg.Error):
            return ResultsStoreError(
                f"the results database {self.location} refused a request: {said}",
                "the database's own words above say why",
            )
        return None


def store_url(settings: Settings | None = None, db_url: str | None = None) -> str:
    """Where results go: the explicit URL, else the environment, else the cache's SQLite file."""
    url = db_url or (settings.results_db if settings is not None else None) or os.environ.get(RESULTS_DB_ENV)
    if url:
        return url
    cache = settings.cache_dir if settings is not None else Settings().cache_dir
    return str(CachePaths(cache).results_db)


def make_store(url: str) -> ResultsStore:
    """A store object for ``url`` (not yet connected)."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url)
    if url.startswith("sqlite:"):
        return SQLiteStore(_sqlite_path(url))
    if url.strip() == ":memory:":
        raise _in_memory(url)
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", url):
        raise ResultsStoreError(
            f"unsupported results database URL {redact_url(url)!r}",
            "use postgresql://user@host/db, sqlite:///path/results.db, or a plain file path",
        )
    try:
        return SQLiteStore(Path(url).expanduser())
    except RuntimeError:  # "~nosuchuser/...": no such user's home
        raise ResultsStoreError(f"cannot find the home folder in the results database path {url!r}",
                                "give the path in full (no ~user that does not exist)") from None


def _sqlite_path(url: str) -> Path:
    """``sqlite:///rel.db`` -> ``rel.db`` (the current folder), ``sqlite:////abs.db`` -> ``/abs.db``,
    as SQLAlchemy reads them; never a file at ``/`` for a relative name."""
    if not url.startswith("sqlite:///"):
        raise ResultsStoreError(
            f"unsupported results database URL {redact_url(url)!r}",
            "write sqlite:///results.db (the current folder), sqlite:////abs/path/results.db, "
            "or a plain path",
        )
    rest = url[len("sqlite:///"):].split("?", 1)[0]
    if rest in ("", ":memory:"):
        raise _in_memory(url)
    return Path(rest).expanduser()


def _in_memory(url: str) -> ResultsStoreError:
    return ResultsStoreError(
        f"the results database URL {url!r} names no file (an in-memory store keeps nothing)",
        "give a file: sqlite:///results.db (the current folder), sqlite:////abs/path/results.db, or a path",
    )


def open_store(
    settings: Settings | None = None, db_url: str | None = None, *, create: bool = True
) -> ResultsStore | None:
    """Connect to the results store (migrating it). With ``create=False`` a SQLite store that is not
    there (no file, or an empty one) gives None, and nothing is made."""
    try:
        return make_store(store_url(settings, db_url)).open(create=create)
    except NoResultsStoreError:
        if create:  # pragma: no cover - only a reader's open raises it
            raise
        return None


def store_named(settings: Settings | None = None, db_url: str | None = None) -> bool:
    """Whether the store was named (a URL, ``settings.results_db``, ``ZLUDA_RUNNER_RESULTS_DB``) rather
    than the default file in the cache folder."""
    return bool(db_url or (settings.results_db if settings is not None else None)
                or os.environ.get(RESULTS_DB_ENV))


class AbsentStore(ResultsStore):
    """The default store before anything was recorded: read, it holds no runs; nothing is made for it
    (it lives in memory, named by the file a recording would make)."""

    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path

    def files(self) -> tuple[Path, ...]:
        return SQLiteStore(self.path).files()

    def _connect(self) -> Connection:
        return sqlite3.connect(":memory:", isolation_level=None)

    def _begin_write(self, cur: Cursor, *, migrating: bool = False) -> None:
        if not migrating:  # its own (in-memory) schema only: a reader never adds to a store
            raise ResultsStoreError(
                f"nothing is recorded in {self.path} yet; nothing was changed",
                "a store is made when a run is first recorded, or by {cmd:results import}",
            )
        cur.execute("BEGIN IMMEDIATE")

    def _wrap_error(self, exc: Exception) -> ResultsStoreError | None:
        return exc if isinstance(exc, ResultsStoreError) else None


def open_reader(settings: Settings | None = None, db_url: str | None = None) -> ResultsStore:
    """The store, open for reading only: never made. A named store that is not there raises
    :class:`NoResultsStoreError`; the default one before anything was recorded is an empty
    :class:`AbsentStore`."""
    store = make_store(store_url(settings, db_url))
    try:
        return store.open(create=False)
    except NoResultsStoreError:
        if store_named(settings, db_url) or not isinstance(store, SQLiteStore):
            raise
        return AbsentStore(store.path).open()
