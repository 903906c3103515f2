"""The results store: every probe, torch-op probe, trace, A/B, verify-load and doctor run, kept
(``Options(results_db=...)``, else ``results.db`` in the cache folder): :func:`record_result`,
:func:`list_results`, :func:`get_result`, :func:`delete_result`, :func:`diff_results`,
:func:`results_matrix`, :func:`export_results`, :func:`import_results`, :func:`results_location`.

Only :func:`record_result` and :func:`import_results` make a store. The readers (and
:func:`delete_result`) never do: a store named by ``Options(results_db=...)`` or
``ZLUDA_RUNNER_RESULTS_DB`` that is not there (no file, or an empty one) raises ResultsStoreError
("no results store at PATH") and nothing is written there; the default store before anything was recorded
reads as empty (no runs, an empty matrix)."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, to_settings, worded
from zluda_runner.core.argcheck import checked
from zluda_runner.results.recordable import Recordable, ResultRow, ResultRows
from zluda_runner.results.schema import ResultsStoreError

__all__ = ["Recordable", "Recorded", "ResultRow", "ResultRows", "ResultsDiff", "delete_result",
           "diff_results", "export_results", "get_result", "import_results", "list_results", "record_result",
           "results_location", "results_matrix"]

if TYPE_CHECKING:
    from zluda_runner.results.matrix import Matrix
    from zluda_runner.results.queries import RunDiff
    from zluda_runner.results.schema import RunRecord
    from zluda_runner.results.store import ResultsStore

    # the front ends' one writer, handed on from where it lives (imported on first use: __getattr__)
    from zluda_runner.results.userfiles import OutputFileError as OutputFileError
    from zluda_runner.results.userfiles import output_path as output_path
    from zluda_runner.results.userfiles import write_output as write_output


def __getattr__(name: str) -> object:
    """The output files' writer, imported on first use: listing runs does not pay for it."""
    if name in ("OutputFileError", "output_path", "write_output"):
        from zluda_runner.results import userfiles

        return getattr(userfiles, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Recorded:
    """What :func:`record_result` did: ``recorded`` (with ``run_id``; ``duplicate`` when that run was already
    stored), or a ``warning`` saying why the store could not take it. ``location`` names the store."""

    recorded: bool
    run_id: str | None
    duplicate: bool
    warning: str | None
    location: str


@checked
def record_result(kind: str, report: Recordable, options: Options | None = None, *,
                  command: Sequence[str] = ()) -> Recorded:
    """Keep one report in the results store (``Options(results_db=...)``, else ``results.db`` in the cache).

    Never raises for a store problem: it comes back as ``warning``.

    Args:
        kind: ``"probe"``, ``"torch-ops"``, ``"trace"``, ``"ab"``, ``"verify-load"`` or ``"doctor"``.
        report: the report (what :func:`run_probe` or :func:`run_doctor` returned), or any
            :class:`Recordable`: an object whose ``result_rows()`` gives its :class:`ResultRows`.
        command: the command line that made it, as words (scrubbed of personal paths when stored).
    """
    from zluda_runner.plan.defaults_facts import read_host
    from zluda_runner.results.recording import record_report

    settings = to_settings(options)
    outcome = record_report(kind, report, settings=settings, command=[str(w) for w in command],
                            host=read_host(os.environ).recorded())
    return Recorded(outcome.recorded, outcome.run_id, outcome.duplicate,
                    outcome.warning and worded(outcome.warning), outcome.location)


@checked
def list_results(options: Options | None = None, *, kind: str | None = None, gpu: str | None = None,
                 since: str | _dt.date | None = None, limit: int | None = 50) -> list[RunRecord]:
    """The recorded runs, oldest first (without their items: :func:`get_result` has them).

    Readers never make a store: a named ``results_db`` that is not there raises ResultsStoreError (nothing
    is created); the default store before the first recorded run reads as empty.

    Args:
        kind: only runs of this kind. gpu: only runs on this GPU target (``"gfx1100"``).
        since: only runs started on or after this date (``YYYY-MM-DD``). limit: the latest N runs.

    Raises:
        ResultsStoreError: the store cannot be opened or read.
    """
    from zluda_runner.api.terms import RESULT_KINDS
    from zluda_runner.results.store import check_since

    if kind is not None and kind not in RESULT_KINDS:
        raise ResultsStoreError(f"kind={kind!r} is not a kind of run",
                                f"give one of {', '.join(map(repr, RESULT_KINDS))}, or kind=None for all")
    if limit is not None and limit < 1:
        raise ResultsStoreError(f"limit={limit} is no number of runs",
                                "give limit=N (1 or more) for the latest N runs, or limit=None for every run")
    with caller_errors():
        since_iso = check_since(_since(since))
    with _store(options, reading=True) as store:
        return store.list_runs(kind=kind, gfx=gpu, since=since_iso, limit=limit)


@checked
def get_result(run_id: str, options: Options | None = None) -> RunRecord:
    """One recorded run with all its items (``run_id``: at least 4 hex digits of its id).

    Raises:
        ResultsStoreError: no such run, or the store cannot be read or is not there.
    """
    with _store(options, reading=True) as store:
        return store.get_run(run_id)


@checked
def results_location(options: Options | None = None) -> str:
    """Where the results store is, as it is shown (a file, or a ``postgresql://`` URL without its
    password); nothing is opened.

    Raises:
        ResultsStoreError: not a store URL this package can open.
    """
    from zluda_runner.results.backends import make_store, store_url

    with caller_errors():
        return make_store(store_url(to_settings(options))).location


@checked
def results_files(options: Options | None = None) -> tuple[Path, ...]:
    """The files the results store is kept in (the database and its ``-wal``/``-shm``/``-journal``;
    none for a database server): what no report or export may be written over. Nothing is opened.

    Raises:
        ResultsStoreError: not a store URL this package can open.
    """
    from zluda_runner.results.backends import make_store, store_url

    with caller_errors():
        return make_store(store_url(to_settings(options))).files()


@checked
def delete_result(run_id: str, options: Options | None = None) -> str:
    """Remove one run and its items from the store; returns its whole id.

    Raises:
        ResultsStoreError: no such run (or ``run_id`` names more than one), or the store cannot be written.
    """
    with _store(options, reading=True) as store:  # a store that is not there is not made to delete from
        return store.delete_run(store.resolve_id(run_id))


@dataclass(frozen=True)
class ResultsDiff:
    """Two runs (``a``, ``b``, with their items) and what changed from ``a`` to ``b`` (``diff``: newly
    failing items, fixed ones, speed changes)."""

    a: RunRecord
    b: RunRecord
    diff: RunDiff


@checked
def diff_results(run_a: str, run_b: str, options: Options | None = None) -> ResultsDiff:
    """What changed from run ``run_a`` to run ``run_b`` (ids: at least 4 hex digits).

    Raises:
        ResultsStoreError: no such run, or the store cannot be read.
    """
    from zluda_runner.results.queries import diff_runs

    with _store(options, reading=True) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
    return ResultsDiff(a, b, diff_runs(a, b))


@checked
def results_matrix(options: Options | None = None, *, since: str | _dt.date | None = None) -> Matrix:
    """Releases x GPU targets x torch builds: pass rates, A/B verdicts and failing items per cell.

    Args:
        since: only runs started on or after this date (``YYYY-MM-DD``).

    Raises:
        ResultsStoreError: the store cannot be read, or ``since`` is not a date.
    """
    from zluda_runner.results.matrix import build_matrix
    from zluda_runner.results.store import check_since

    with caller_errors():
        since_iso = check_since(_since(since))
    with _store(options, reading=True) as store:
        return build_matrix(store, since=since_iso)


@checked
def export_results(file: Path | str, options: Options | None = None, *,
                   since: str | _dt.date | None = None) -> int:
    """Write the runs (``since`` a date) to ``file``, a bundle to share (JSON lines; nothing personal);
    returns how many.

    Raises:
        ResultsStoreError: the store cannot be read. OutputFileError: the file cannot be written there.
    """
    from zluda_runner.results.bundle import export_bundle
    from zluda_runner.results.userfiles import output_path

    target = Path(file)
    since = _since(since)
    with caller_errors():
        output_path(target, (), what="the bundle", option="{cmd:results export}")  # before the store opens
    with _store(options, reading=True) as store:
        return export_bundle(store, target, since=since)


@checked
def import_results(files: Path | str | Sequence[Path | str],
                   options: Options | None = None) -> tuple[int, int]:
    """Merge bundles (what :func:`export_results` wrote) into the store: ``(imported, already stored)``.
    Every bundle is checked whole first: a bad one stores nothing of any of them (and makes no store).

    Raises:
        ResultsStoreError: a bundle is malformed or too large, or the store cannot be written.
    """
    from zluda_runner.results.bundle import checked_bundles, store_bundles

    each = [files] if isinstance(files, str | os.PathLike) else files  # one bundle: not its path's letters
    paths = [Path(f) for f in each]
    # every bundle checked before a store is opened (or made) for them
    with caller_errors(), checked_bundles(paths) as bundles, _store(options, reading=False) as store:
        return store_bundles(store, bundles)


def _since(since: object) -> str | None:
    """``since`` as text: a ``datetime.date`` (or ``datetime``) as its day; TypeError for anything else."""
    if isinstance(since, _dt.date):
        return (since.date() if isinstance(since, _dt.datetime) else since).isoformat()
    return since  # type: ignore[return-value]




@contextmanager
def _store(options: Options | None, *, reading: bool) -> Iterator[ResultsStore]:
    """The store, open for the ``with`` block (``reading``: never made); its errors worded for the caller."""
    from zluda_runner.results.backends import open_reader, open_store

    with caller_errors():
        store = open_reader(to_settings(options)) if reading else open_store(to_settings(options))
        assert store is not None  # create=True always opens
        with store:
            yield store
