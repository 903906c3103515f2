"""Known-good locks: the lock each recorded ``find`` kept (its ``lock`` item, the shared form of
:mod:`zluda_runner.release.lockfile`), per GPU target and torch build, the latest of each release and
variant. The matrix shows them; ``find --from`` tries those for this GPU first."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zluda_runner.core.errors import LockError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.results.schema import RunRecord

if TYPE_CHECKING:  # the release stack is imported when there are locks to read (the matrix of a store
    from zluda_runner.release.lockfile import Lock  # with no find runs does not pay for it)


@dataclass(frozen=True)
class KnownLock(JsonMixin):
    """A lock a recorded find kept: where it was proven (GPU target, torch build), what it pins."""

    gfx: str
    torch: str
    release: str  # the manifest id, else the folder's or the archive's name
    variant: str
    proven_on_gpu: bool
    run_id: str
    when: str
    lock: Lock


def known_locks(runs: Iterable[RunRecord]) -> list[KnownLock]:
    """The locks of the find runs among ``runs`` (with their items), the latest of each (GPU target,
    torch build, release, variant), sorted by those; a lock item that is not a valid lock is left out
    (import refuses one: :mod:`zluda_runner.results.bundle`)."""
    from zluda_runner.release.lockfile import SHARED_ITEM, lock_from_shared

    latest: dict[tuple[str, str, str, str], KnownLock] = {}
    for run in runs:
        if run.kind != "find":
            continue
        for item in run.items:
            if item.item != SHARED_ITEM:
                continue
            try:
                lock = lock_from_shared(item.detail, f"run {run.run_id[:12]}")
            except LockError:
                continue
            known = KnownLock(run.gfx, run.torch_build, lock.release.id or lock.release.ref, lock.variant,
                              lock.proven_on_gpu, run.run_id, run.started_at, lock)
            key = (known.gfx, known.torch, known.release, known.variant)
            if key not in latest or (latest[key].when, latest[key].run_id) < (known.when, known.run_id):
                latest[key] = known
    return [latest[key] for key in sorted(latest)]
