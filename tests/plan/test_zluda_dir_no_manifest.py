"""A ``--zluda-dir`` launch resolves no release (issue 27, point 1): no resolver, no manifest in use, on a
host with no GPU (the GPU x HIP rule warnings, the host's, still read the manifest where a GPU is); the
folder as given is the release (its scan reads the fork's file names from release/forknames, not the
packaged manifest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zluda_runner.conduct import resolve
from zluda_runner.conduct.run import plan_context, prepare_run
from zluda_runner.core.settings import Settings
from zluda_runner.release import manifest as manifest_module


def test_a_zluda_dir_run_resolves_no_release(standin_releases: dict[str, Path], apps: dict[str, Path],
                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a --zluda-dir launch asked for the manifest in use")

    monkeypatch.setattr(resolve, "resolve_release", refuse)
    monkeypatch.setattr(resolve, "resolve_run", refuse)
    monkeypatch.setattr(manifest_module, "load_current_manifest", refuse)
    monkeypatch.setattr(manifest_module, "load_manifest", refuse)  # not even the packaged one
    settings = Settings(zluda_dir=standin_releases["good"], cache_dir=tmp_path / "cache", force=True)
    prepared = prepare_run(plan_context([str(apps["rpath"])], settings).argv, settings)
    assert prepared.plan.release is not None and prepared.plan.release.id is None  # the folder as is
