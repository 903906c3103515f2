"""Known-good locks as the candidates ``find`` tries first: those of a results bundle (``find --from
FILE|URL``, ``results export``'s file) for this GPU, then those of this results store. A manifest
release is tried by its id (fetched and hash-checked like any other); a folder's lock is matched by its
files' hashes against the folders given with ``--candidate``/``--zluda-dir`` (a folder elsewhere is not
here). The bundle is read as ``results import`` reads one (bounded, each run checked against its id,
each lock validated); from a URL, at most :data:`MAX_FROM_BYTES`, kept only in a temporary file of the
cache while it is read."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.paths import default_cache_dir
from zluda_runner.core.settings import Settings
from zluda_runner.finder.model import Candidate
from zluda_runner.release.lockfile import OTHER_HIP_VARIANT, hash_tree
from zluda_runner.results.locks import KnownLock, known_locks

MAX_FROM_BYTES = 16 * 1024 * 1024


def locks_from(source: str, cache_dir: Path | None) -> list[KnownLock]:
    """The known-good locks in the bundle at ``source`` (a file, or an https URL)."""
    from zluda_runner.results.bundle import read_bundle

    if "://" not in source:
        return known_locks(read_bundle(Path(source)))
    from zluda_runner.release.update import fetch_document
    from zluda_runner.results.schema import ResultsStoreError

    data = fetch_document(source, what="bundle", limit=MAX_FROM_BYTES, error=ResultsStoreError)
    folder = cache_dir or default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".from-", dir=folder) as tmp:
        path = Path(tmp) / "bundle.jsonl"
        path.write_bytes(data)
        return known_locks(read_bundle(path))


def stored_locks(settings: Settings) -> list[KnownLock]:
    """The known-good locks the results store holds (none where it cannot be read: a search goes on)."""
    from zluda_runner.results.backends import open_reader

    try:
        with open_reader(settings) as store:
            ids = store.run_ids("find")
            return known_locks(store.get_runs(ids)) if ids else []
    except ZludaRunnerError:
        return []


def known_first(locks: Sequence[KnownLock], gfx: str | None, given: Sequence[Candidate],
                source: str) -> tuple[list[Candidate], list[str]]:
    """The candidates ``locks`` name for this GPU (``gfx``), proven on the GPU first, and a note per lock
    that is not tried (another GPU, a folder not given here)."""
    out: list[Candidate] = []
    notes: list[str] = []
    hashes: dict[Candidate, object] = {}
    for known in sorted(locks, key=lambda k: not k.proven_on_gpu):
        lock = known.lock
        if lock.host.gfx != gfx:
            notes.append(f"{source}: the lock of {known.release} was proven on {lock.host.gfx or 'no GPU'}, "
                         f"not on {gfx or 'this host (no GPU seen)'}: not tried first")
            continue
        rel = lock.release
        hip = lock.host.hip_path if lock.variant == OTHER_HIP_VARIANT else None  # the HIP it was proven with
        if rel.source != "dir" and rel.id:
            cand = Candidate("manifest", rel.id, lock.variant, hip)
        else:
            match = None
            for given_cand in (c for c in given if c.source == "dir"):
                if given_cand not in hashes:
                    try:
                        hashes[given_cand] = hash_tree(Path(given_cand.ref))
                    except (OSError, ZludaRunnerError):
                        hashes[given_cand] = None
                if rel.files and hashes[given_cand] == rel.files:
                    match = given_cand
                    break
            if match is None:
                notes.append(f"{source}: the lock of the folder {rel.ref} matches no folder given here "
                             "(by its files' SHA-256): give it with {opt:candidate DIR}")
                continue
            cand = Candidate("dir", match.ref, lock.variant, hip)
        if cand not in out:
            out.append(cand)
    return out, notes
