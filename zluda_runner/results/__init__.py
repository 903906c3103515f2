"""The results store: every probe, torch-op probe, trace, A/B, verify-load and doctor run, kept.

Library entry points:

* :func:`record_report` (``recording``): store one run's report; never raises.
* :func:`open_store` (``backends``): SQLite in the cache folder, or PostgreSQL by URL.
* :func:`summary_for_gpu`, :func:`failed_releases_for_gpu`, :func:`diff_runs` (``queries``).
* :func:`build_matrix` (``matrix``), :func:`render_html` (``matrix_html``).
* :func:`export_bundle`, :func:`import_bundles` (``bundle``).
"""

from __future__ import annotations

from zluda_runner.results.backends import RESULTS_DB_ENV, make_store, open_store, store_url
from zluda_runner.results.matrix import build_matrix
from zluda_runner.results.queries import diff_runs, failed_releases_for_gpu, summary_for_gpu
from zluda_runner.results.recording import RecordOutcome, record_report
from zluda_runner.results.schema import KINDS, ItemRecord, ResultsStoreError, RunRecord
from zluda_runner.results.store import ResultsStore

__all__ = [
    "KINDS",
    "RESULTS_DB_ENV",
    "ItemRecord",
    "RecordOutcome",
    "ResultsStore",
    "ResultsStoreError",
    "RunRecord",
    "build_matrix",
    "diff_runs",
    "failed_releases_for_gpu",
    "make_store",
    "open_store",
    "record_report",
    "store_url",
    "summary_for_gpu",
]
