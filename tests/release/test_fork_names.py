"""The fork's Windows file names a ``--zluda-dir`` folder is read with (release/forknames) are what every
fork Windows asset of the packaged manifest lists: the same load names, CUDA majors, saved originals,
variables and stand-ins, the same launchers; a file the table calls always shipped is in every asset."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.release.forknames import FORK_FILES, FORK_LAUNCHERS
from zluda_runner.release.layout import stub_text
from zluda_runner.release.manifest import load_manifest


def test_the_fork_names_are_the_manifests() -> None:
    assets = [a for r in load_manifest().releases for a in r.assets
              if any(Path(f.path).name not in f.load_names for f in a.files if f.load_names)]
    assert len(assets) >= 7  # every fork Windows zip from rel.11cc584 to 3.9.6
    for asset in assets:
        assert tuple(x.path for x in asset.launchers) == FORK_LAUNCHERS, asset.name
        names = {f.path for f in asset.files}
        assert {n for n, f in FORK_FILES.items() if not f.optional} <= names <= set(FORK_FILES), asset.name
        for f in asset.files:
            fork = FORK_FILES[f.path]
            ours = (fork.family, (fork.load_name,), fork.cuda_major, dict(fork.needs_env))
            assert ours == (f.family, tuple(f.load_names), f.cuda_major, f.needs_env), f.path
            assert fork.original_saved_as == f.original_saved_as, f.path
            stub = stub_text(f)
            assert (fork.stub is None) == (stub is None)
            assert stub is None or (f.stub_reason or "") in (fork.stub or "")
