"""A Windows release since v7 ships a 32-bit ``32/`` folder (``32/nvcuda.dll``, ``32/nvapi.dll`` for 32-bit
PhysX: vosen/ZLUDA ``docs/src/physx32.md``@8a7931be). A 64-bit process cannot load those: the release root
is never ``32/`` and nothing is placed from it (issue 22).

The stand-in zip has the shape of v7-preview.10's ``zluda-windows-9c8b43f.zip`` as the manifest lists it
(the files of v6's Windows zip plus ``nvapi64.dll``, ``trace/nvapi64.dll``, ``zluda64_server.exe`` and
``32/``) under its ``zluda/`` top folder; file contents are placeholders: only names are read here."""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path

import pytest

from zluda_runner.core.errors import PlanError
from zluda_runner.release.layout import scan_release_dir
from zluda_runner.release.manifest import load_manifest, resolve_release_root
from zluda_runner.release.model import Asset
from zluda_runner.release.unpack import safe_extract


def _preview10() -> Asset:
    return load_manifest().find("upstream-v7-preview.10").asset("zluda-windows-9c8b43f.zip")


def _standin_zip(tmp_path: Path, asset: Asset) -> Path:
    names = [f.path for f in asset.files] + asset.other_files + [launcher.path for launcher in asset.launchers
                                                                if launcher.kind != "tracer_dir"]
    assert {"nvapi64.dll", "trace/nvapi64.dll", "zluda64_server.exe", "32/nvcuda.dll"} <= set(names)
    archive = tmp_path / asset.name
    with zipfile.ZipFile(archive, "w") as zf:
        for name in sorted(set(names)):
            zf.writestr(f"zluda/{name}", b"MZ placeholder " + name.encode())
    return archive


def test_the_release_root_is_never_the_32bit_folder(tmp_path: Path) -> None:
    asset = _preview10()
    unpacked = tmp_path / "unpacked"
    safe_extract(_standin_zip(tmp_path, asset), "zip", unpacked)
    assert resolve_release_root(unpacked, asset) == unpacked / "zluda"
    # a root the manifest does not know: the search runs by the listed files, and the first one
    # (nvcuda.dll) is found only as zluda/32/nvcuda.dll; a second top entry rules out "the one folder"
    (unpacked / "zluda" / "nvcuda.dll").unlink()
    (unpacked / "README.txt").write_text("unpacked by hand")
    searched = resolve_release_root(unpacked, dataclasses.replace(asset, archive_root=None))
    assert searched == unpacked / "zluda"


def test_no_shim_is_recognised_from_the_32bit_folder(tmp_path: Path) -> None:
    """(guards the scan staying one folder deep: a recursive one would mix 32-bit DLLs in)"""
    asset = _preview10()
    unpacked = tmp_path / "unpacked"
    safe_extract(_standin_zip(tmp_path, asset), "zip", unpacked)
    layout = scan_release_dir(unpacked)  # the archive's top folder: zluda/ is found, 32/ is not mixed in
    assert layout.root == str(unpacked / "zluda")
    assert layout.shims and not [s.path for s in layout.shims if "/32/" in s.path.replace("\\", "/")]


def test_a_folder_whose_only_driver_is_32bit_is_not_a_release(tmp_path: Path) -> None:
    folder = tmp_path / "zluda"
    (folder / "32").mkdir(parents=True)
    (folder / "32" / "nvcuda.dll").write_bytes(b"MZ")
    (folder / "32" / "nvapi.dll").write_bytes(b"MZ")
    (folder / "zluda64_server.exe").write_bytes(b"MZ")
    with pytest.raises(PlanError) as info:
        scan_release_dir(folder)
    assert info.value.message.startswith(f"{folder} ")
    assert "(libcuda.so.1 / libcuda.so / nvcuda.dll)" in info.value.message  # the drivers it looked for
