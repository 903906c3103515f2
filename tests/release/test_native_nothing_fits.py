"""Where no ZLUDA release fits a run (run, plan, warmup, fetch: the one "nothing fits" error) and the
manifest's data says AMD publishes native ROCm wheels for the GPU, the error's ways name them (their install
command, from :func:`zluda_runner.release.native.native_wheels`, the one decision); ``releases`` and
``doctor`` say it in their own line instead, so their error does not repeat it."""

from __future__ import annotations

import pytest

from zluda_runner.core.hipfound import HipFound
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.native import native_wheels
from zluda_runner.release.selection import nothing_fits, resolve


def _rdna4_on_hip_6_2():  # type: ignore[no-untyped-def]
    """RDNA4 on HIP 6.2 (Linux, torch cu12): a GPU rule rejects every release; AMD's wheels exist."""
    manifest = load_manifest()
    found = HipFound("6.2", "HIP 6.2 (/opt/rocm-6.2)", origin="rocm")
    return resolve(manifest, found, os="linux", cuda=12, gfx="gfx1201"), manifest


def test_the_runs_error_names_the_native_wheels_install() -> None:
    resolution, manifest = _rdna4_on_hip_6_2()
    assert resolution.chosen is None
    native = native_wheels(manifest, "gfx1201", "linux")
    assert native is not None and native.available
    hint = nothing_fits(resolution).hint or ""
    assert native.install in hint


@pytest.mark.parametrize("said_by", ["releases", "doctor"])
def test_releases_and_doctor_keep_it_to_their_own_line(said_by: str) -> None:
    resolution, manifest = _rdna4_on_hip_6_2()
    native = native_wheels(manifest, "gfx1201", "linux")
    assert native is not None
    assert native.install not in (nothing_fits(resolution, said_by=said_by).hint or "")


def test_no_gpu_known_no_native_way() -> None:
    """No GPU read (gfx unknown): nothing to say of native wheels, whatever else does not fit."""
    found = HipFound("5.2", "HIP 5.2 (Debian's libamdhip64-5)", origin="distribution")
    resolution = resolve(load_manifest(), found, os="linux", cuda=12)
    assert resolution.chosen is None
    assert "--index-url" not in (nothing_fits(resolution).hint or "")
