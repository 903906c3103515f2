"""The results store: every probe, torch-op probe, trace, A/B, verify-load and doctor run, kept.

Library entry points:

* :func:`record_report` (``recording``): store one run's report; never raises. A report records
  itself through the :class:`~zluda_runner.results.recordable.Recordable` protocol.
* :func:`open_store` (``backends``): SQLite in the cache folder, or PostgreSQL by URL;
  :func:`open_reader` for a reader (a store that is not there is never made).
* :func:`summary_for_gpu`, :func:`failed_releases_for_gpu`, :func:`diff_runs` (``queries``).
* :func:`build_matrix` (``matrix``), :func:`render_html` (``matrix_html``).
* :func:`export_bundle`, :func:`import_bundles` (``bundle``).

Each name is imported on first use: the reports of the higher stages import
``zluda_runner.results.recordable`` without loading the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# public name -> the module that defines it
_NAMES = {
    "RESULTS_DB_ENV": "backends", "make_store": "backends", "open_reader": "backends",
    "open_store": "backends", "store_url": "backends",
    "build_matrix": "matrix",
    "diff_runs": "queries", "failed_releases_for_gpu": "queries", "summary_for_gpu": "queries",
    "RecordOutcome": "recording", "record_report": "recording",
    "KINDS": "schema", "ItemRecord": "schema", "NoResultsStoreError": "schema",
    "ResultsStoreError": "schema", "RunRecord": "schema",
    "ResultsStore": "store",
}

if TYPE_CHECKING:
    from zluda_runner.results.backends import RESULTS_DB_ENV, make_store, open_reader, open_store, store_url
    from zluda_runner.results.matrix import build_matrix
    from zluda_runner.results.queries import diff_runs, failed_releases_for_gpu, summary_for_gpu
    from zluda_runner.results.recording import RecordOutcome, record_report
    from zluda_runner.results.schema import (
        KINDS,
        ItemRecord,
        NoResultsStoreError,
        ResultsStoreError,
        RunRecord,
    )
    from zluda_runner.results.store import ResultsStore

__all__ = [
    "KINDS",
    "RESULTS_DB_ENV",
    "ItemRecord",
    "NoResultsStoreError",
    "RecordOutcome",
    "ResultsStore",
    "ResultsStoreError",
    "RunRecord",
    "build_matrix",
    "diff_runs",
    "failed_releases_for_gpu",
    "make_store",
    "open_reader",
    "open_store",
    "record_report",
    "store_url",
    "summary_for_gpu",
]


def __getattr__(name: str) -> object:
    """A public name, imported on first use (and kept)."""
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'zluda_runner.results' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"zluda_runner.results.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})
