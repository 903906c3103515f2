"""Recording a run: the one entry point the commands call after they have their report.

    with asked(["zluda-run", "probe", "--torch"]):   # the front end: what the user asked
        outcome = record_report("probe", report, settings=settings)
    if outcome.warning:
        click.echo(f"warning: {outcome.warning}", err=True)

What a run records as its command is the one invocation record: what the user asked, as the front end
parsed it (:func:`asked`: the command line's words; an API call's own arguments), its credentials masked
(:func:`zluda_runner.core.redact.redact_words`) whoever gives it. :func:`record_report` never raises: a
locked, corrupt or unreachable store, or a report it cannot read, comes back as ``outcome.warning`` and
the run's own result stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.redact import redact_url, redact_words
from zluda_runner.core.settings import Settings
from zluda_runner.results.asked import ASKED
from zluda_runner.results.asked import asked as asked
from zluda_runner.results.backends import make_store, store_url
from zluda_runner.results.bundle import check_run
from zluda_runner.results.convert import items_of, rows_of
from zluda_runner.results.fingerprint import Scrubber, fingerprint
from zluda_runner.results.schema import (
    MAX_ARGV,
    MAX_KEYS,
    MAX_NAME,
    ResultRow,
    ResultsStoreError,
    RunRecord,
    clean_run,
    content_id,
    summarise,
)
from zluda_runner.results.store import ResultsStore, now_iso


@dataclass(frozen=True)
class RecordOutcome:
    recorded: bool
    run_id: str | None = None
    duplicate: bool = False  # the same run was already stored
    warning: str | None = None
    location: str = ""
    error_kind: str | None = None  # not recorded: the error's stable kind (None: not one of ours)


def _small_dict(value: Mapping[str, object] | None, scrubber: Scrubber) -> dict[str, Any] | None:
    if value is None:
        return None
    kept = {
        str(k): v
        for k, v in list(value.items())[:MAX_KEYS]
        if v is None or isinstance(v, str | int | float | bool)
    }
    return scrubber.mapping(kept)


def build_run(
    kind: str,
    report: object,
    *,
    command: list[str],
    release: Mapping[str, object] | None = None,
    target: Mapping[str, object] | None = None,
    host: Mapping[str, object] | None = None,
    started_at: str | None = None,
    scrubber: Scrubber | None = None,
) -> RunRecord:
    """The record of one run, scrubbed and with its content id (raises ResultsStoreError).

    ``report``: a :class:`~zluda_runner.results.recordable.Recordable` report (its rows are what is
    kept)."""
    scrubber = scrubber or Scrubber()
    rows = rows_of(kind, report)
    items, extra = items_of(kind, rows, scrubber)
    summary: dict[str, Any] = {**summarise(items), **extra}
    run = RunRecord(
        kind=kind,
        started_at=started_at or now_iso(),
        host=fingerprint(host, rows.host_facts),
        release=_small_dict(release, scrubber),
        target=_small_dict(target, scrubber),
        command=[scrubber.text(word) for word in redact_words([str(w) for w in command[:MAX_ARGV]])],
        summary=scrubber(summary),
        items=[ResultRow(i.item, i.status[:MAX_NAME], i.ok, i.detail, i.numbers) for i in items],
    )
    run = clean_run(run)  # no NUL, valid UTF-8 (a non-UTF-8 argv word): both backends keep it
    run = replace(run, run_id=content_id(run))
    try:  # a run stored must export and import again: one that import refuses makes its bundle refused
        check_run({"run": run.to_dict()})
    except ValueError as exc:
        raise ResultsStoreError(
            f"this {kind} run cannot be kept: {exc} (a results bundle could not carry it)",
            "a report's result_rows() gives plain rows and summary values; see zluda_runner.ResultRows",
        ) from None
    return run


def record_report(
    kind: str,
    report: object,
    *,
    settings: Settings,
    command: Sequence[str] | None = None,
    release: Mapping[str, object] | None = None,
    target: Mapping[str, object] | None = None,
    db_url: str | None = None,
    host: Mapping[str, object] | None = None,
    started_at: str | None = None,
    store: ResultsStore | None = None,
) -> RecordOutcome:
    """Store one run's report; never raises (problems come back as ``warning``).

    ``kind``: probe, torch-ops, trace, ab, verify-load or doctor. ``release``: e.g.
    ``{"id": "fork-3.9.5", "asset": "...zip", "sha256": "..."}``. ``target``: e.g.
    ``{"torch_version": "2.4.1+cu118", "cuda_major": 11}`` or ``{"binary": "app"}``.
    ``host``: what the caller knows of the host (flat fingerprint keys, or doctor facts).
    ``store``: an open store to reuse (else the one ``db_url``/settings name is opened). ``command``:
    what the user asked (default: :func:`asked`).
    """
    location = ""
    try:
        url = db_url or store_url(settings)
        location = redact_url(url)
        asked = list(ASKED.get() or (kind,)) if command is None else list(command)
        run = build_run(kind, report, command=asked, release=release, target=target, host=host,
                        started_at=started_at)
        if store is not None:
            added = store.insert_run(run)
        else:
            with make_store(url).open() as opened:
                added = opened.insert_run(run)
        return RecordOutcome(True, run.run_id, duplicate=not added, location=location)
    except Exception as exc:  # recording must never fail the run it records
        known = exc if isinstance(exc, ZludaRunnerError) else None
        message = (known.message if known else None) or f"{type(exc).__name__}: {exc}"
        hint = known.hint if known else None
        warning = f"results not recorded: {message}" + (f" (hint: {hint})" if hint else "")
        return RecordOutcome(False, warning=warning, location=location,
                             error_kind=known.kind if known else None)


def known_on_this_gpu(settings: Settings, gfx: str | None, release_id: str | None = None) -> list[str]:
    """What the store knows for this host's GPU target (``releases``, the run path); never raises."""
    if not gfx or not settings.record:
        return []
    from zluda_runner.results.queries import summary_for_gpu

    try:
        rows = summary_for_gpu(gfx, settings=settings)
    except Exception:  # a broken store never stands in the way of a run
        return []
    return [row.text() for row in rows if release_id is None or row.release == release_id]
