"""DLL placement into a stand-in torch/lib with real PE files: journal, interruption, restore, drift."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from zluda_runner.core.errors import LaunchError, PlacementError
from zluda_runner.launch import windows
from zluda_runner.launch.windows import Placement

ORIGINALS = ("cublas64_11.dll", "cusparse64_11.dll", "nvrtc64_112_0.dll")


@pytest.fixture(scope="module")
def dlls(mingw_build) -> dict[str, Path]:
    def dll(tag: str, name: str) -> Path:
        return mingw_build(["launch/pe_dll.c"], name, args=[f'-DDLL_TAG="{tag}"'])

    built = {f"torch/{n}": dll(f"torch {n}", n) for n in ORIGINALS}
    built["torch2/cublas64_11.dll"] = dll("torch upgraded cublas", "cublas64_11.dll")
    for n in ("cublas.dll", "cusparse.dll", "nvrtc.dll"):
        built[f"zluda/{n}"] = dll(f"zluda {n}", n)
    return built


@pytest.fixture
def torch_lib(tmp_path: Path, dlls) -> Path:
    lib = tmp_path / "site-packages" / "torch" / "lib"
    lib.mkdir(parents=True)
    for name in ORIGINALS:
        shutil.copyfile(dlls[f"torch/{name}"], lib / name)
    (lib / "torch_cuda.dll").write_bytes(b"MZ not touched")
    return lib


@pytest.fixture
def placements(dlls) -> list[Placement]:
    return [
        Placement(dlls["zluda/cublas.dll"], "cublas64_11.dll"),
        Placement(dlls["zluda/cusparse.dll"], "cusparse64_11.dll"),
        Placement(dlls["zluda/nvrtc.dll"], "nvrtc64_112_0.dll", backup_name="nvrtc_cuda.dll"),
    ]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: sha(p) for p in folder.iterdir() if p.is_file()}


class Crash(Exception):
    pass


def crash_after(k: int):
    seen: list[str] = []

    def hook(name: str) -> None:
        seen.append(name)
        if len(seen) == k:
            raise Crash(name)

    return hook


def test_place_replaces_files_and_journals(torch_lib: Path, placements, dlls) -> None:
    before = snapshot(torch_lib)
    result = windows.place(torch_lib, placements)
    assert sorted(result.placed) == [
        "cublas64_11.dll", "cusparse64_11.dll", "nvrtc64_112_0.dll", "nvrtc_cuda.dll",
    ]
    assert sha(torch_lib / "cublas64_11.dll") == sha(dlls["zluda/cublas.dll"])
    assert sha(torch_lib / "nvrtc64_112_0.dll") == sha(dlls["zluda/nvrtc.dll"])
    assert sha(torch_lib / "nvrtc_cuda.dll") == before["nvrtc64_112_0.dll"]  # the fork loads torch's own
    assert sha(torch_lib / "torch_cuda.dll") == before["torch_cuda.dll"]
    journal = json.loads(result.journal.read_text())
    assert journal["state"] == "placed"
    entries = {e["name"]: e for e in journal["entries"]}
    assert entries["cublas64_11.dll"]["original"]["sha256"] == before["cublas64_11.dll"]
    assert entries["cublas64_11.dll"]["placed"]["sha256"] == sha(dlls["zluda/cublas.dll"])
    assert entries["nvrtc_cuda.dll"]["original"] is None  # "absent"
    saved = result.journal.parent / entries["cusparse64_11.dll"]["saved"]
    assert sha(saved) == before["cusparse64_11.dll"]
    assert not [p for p in torch_lib.iterdir() if "tmp" in p.name]
    st = windows.status(torch_lib, placements=placements)
    assert st.state == "placed" and not st.drift and not st.needs_replace
    again = windows.place(torch_lib, placements)
    assert again.already_placed and again.placed == []


def test_restore_gives_back_identical_originals(torch_lib: Path, placements) -> None:
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    result = windows.restore(torch_lib)
    assert sorted(result.restored) == ["cublas64_11.dll", "cusparse64_11.dll", "nvrtc64_112_0.dll"]
    assert result.removed == ["nvrtc_cuda.dll"]
    assert snapshot(torch_lib) == before
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()
    assert windows.status(torch_lib).state == "none"
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()


@pytest.mark.parametrize("k", [1, 3])
def test_interrupted_placement_detected_then_finished(torch_lib: Path, placements, dlls, k: int) -> None:
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(k))
    found = windows.detect_interrupted(torch_lib)
    assert found is not None
    assert len(found.done) == k and len(found.pending) == 4 - k and not found.changed
    assert windows.status(torch_lib).needs_replace
    with pytest.raises(PlacementError, match="interrupted"):
        windows.place(torch_lib, placements)
    windows.finish(torch_lib)
    assert windows.detect_interrupted(torch_lib) is None
    assert sha(torch_lib / "cusparse64_11.dll") == sha(dlls["zluda/cusparse.dll"])
    assert not windows.status(torch_lib, placements=placements).needs_replace


def test_interrupted_placement_undone(torch_lib: Path, placements) -> None:
    before = snapshot(torch_lib)
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(2))
    windows.undo(torch_lib)
    assert snapshot(torch_lib) == before
    assert windows.detect_interrupted(torch_lib) is None
    with pytest.raises(PlacementError, match="no interrupted placement"):
        windows.finish(torch_lib)


def test_drift_after_pip_reinstall_is_detected_and_replaced(torch_lib: Path, placements, dlls) -> None:
    windows.place(torch_lib, placements)
    shutil.copyfile(dlls["torch/cusparse64_11.dll"], torch_lib / "cusparse64_11.dll")  # same torch again
    shutil.copyfile(dlls["torch2/cublas64_11.dll"], torch_lib / "cublas64_11.dll")  # a newer torch
    st = windows.status(torch_lib)
    states = {f.name: f.state for f in st.files}
    assert states["cusparse64_11.dll"] == "original"
    assert states["cublas64_11.dll"] == "changed"
    assert states["nvrtc64_112_0.dll"] == "placed"
    assert st.needs_replace and len(st.drift) == 2
    result = windows.place(torch_lib, placements)  # the next run re-places
    assert not result.already_placed
    assert sha(torch_lib / "cublas64_11.dll") == sha(dlls["zluda/cublas.dll"])
    assert not windows.status(torch_lib, deep=True).needs_replace
    windows.restore(torch_lib)
    # the newer torch's DLL is the original now: restore brings that back, not the old one
    assert sha(torch_lib / "cublas64_11.dll") == sha(dlls["torch2/cublas64_11.dll"])
    assert sha(torch_lib / "cusparse64_11.dll") == sha(dlls["torch/cusparse64_11.dll"])


def test_status_wants_replace_when_the_release_changes(torch_lib: Path, placements, dlls) -> None:
    windows.place(torch_lib, placements)
    other = [Placement(dlls["zluda/cusparse.dll"], "cublas64_11.dll"), *placements[1:]]
    assert windows.status(torch_lib, placements=other).needs_replace
    assert not windows.place(torch_lib, other).already_placed
    assert sha(torch_lib / "cublas64_11.dll") == sha(dlls["zluda/cusparse.dll"])


def test_restore_without_journal_is_a_clear_error(torch_lib: Path) -> None:
    with pytest.raises(PlacementError, match="nothing to restore") as info:
        windows.restore(torch_lib)
    assert info.value.hint


def test_restore_with_originals_gone_changes_nothing(torch_lib: Path, placements) -> None:
    windows.place(torch_lib, placements)
    placed = snapshot(torch_lib)
    shutil.rmtree(torch_lib / windows.JOURNAL_DIRNAME / windows.ORIGINALS_DIR)
    with pytest.raises(PlacementError, match="missing or damaged") as info:
        windows.restore(torch_lib)
    assert "reinstall" in (info.value.hint or "")
    assert snapshot(torch_lib) == placed  # nothing half-done
    assert (torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE).exists()


def test_bad_requests_are_refused(torch_lib: Path, dlls) -> None:
    with pytest.raises(PlacementError, match="plain file name"):
        windows.place(torch_lib, [Placement(dlls["zluda/cublas.dll"], "..\\evil.dll")])
    with pytest.raises(PlacementError, match="missing"):
        windows.place(torch_lib, [Placement(torch_lib / "nope.dll", "cublas64_11.dll")])
    with pytest.raises(PlacementError, match="nothing to keep"):
        windows.place(torch_lib, [Placement(dlls["zluda/nvrtc.dll"], "nvrtc64_120_0.dll", "nvrtc_cuda.dll")])
    assert windows.status(torch_lib).state == "none"
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()


def test_zluda_exe_argv(tmp_path: Path) -> None:
    (tmp_path / "ZLUDA.exe").write_bytes(b"MZ")
    argv = windows.zluda_exe_argv(tmp_path, ["python", "infer.py", "--x"])
    assert argv == [str(tmp_path / "ZLUDA.exe"), "--", "python", "infer.py", "--x"]
    with pytest.raises(LaunchError, match=r"no zluda\.exe"):
        windows.zluda_exe_argv(tmp_path / "missing", ["python"])
