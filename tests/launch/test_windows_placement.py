"""DLL placement into a stand-in torch/lib: journal, interruption, restore, drift, quarantine.

Pure file logic: the files are distinct byte strings (no compiler needed); what Windows' loader does
with placed DLLs is proven under Wine in tests/windows/."""

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
def dlls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("dlls")

    def dll(tag: str, name: str) -> Path:
        path = base / tag.replace(" ", "_") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"MZ" + tag.encode() * 64)
        return path

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
def test_interrupted_placement_is_completed_by_the_next_placement(torch_lib: Path, placements, dlls,
                                                                   k: int) -> None:
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(k))
    st = windows.status(torch_lib)
    assert st.state == "in-progress" and st.needs_replace and st.next_run == "re-place"
    windows.place(torch_lib, placements)  # what the next run does
    assert sha(torch_lib / "cusparse64_11.dll") == sha(dlls["zluda/cusparse.dll"])
    assert not windows.status(torch_lib, placements=placements).needs_replace


def test_interrupted_placement_restored_exactly(torch_lib: Path, placements) -> None:
    before = snapshot(torch_lib)
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(2))
    windows.restore(torch_lib)
    assert snapshot(torch_lib) == before
    assert windows.status(torch_lib).state == "none"


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
    with pytest.raises(PlacementError) as info:
        windows.restore(torch_lib)
    assert str(torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE) in info.value.message
    assert info.value.hint


def test_restore_with_originals_gone_changes_nothing(torch_lib: Path, placements) -> None:
    windows.place(torch_lib, placements)
    placed = snapshot(torch_lib)
    shutil.rmtree(torch_lib / windows.JOURNAL_DIRNAME / windows.ORIGINALS_DIR)
    with pytest.raises(PlacementError) as info:
        windows.restore(torch_lib)
    assert str(torch_lib / windows.JOURNAL_DIRNAME / windows.ORIGINALS_DIR) in info.value.message
    assert "reinstall" in (info.value.hint or "")
    assert snapshot(torch_lib) == placed  # nothing half-done
    assert (torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE).exists()


def test_bad_requests_are_refused(torch_lib: Path, dlls) -> None:
    with pytest.raises(PlacementError, match=r"'\.\.\\\\evil\.dll'"):
        windows.place(torch_lib, [Placement(dlls["zluda/cublas.dll"], "..\\evil.dll")])
    with pytest.raises(PlacementError, match="missing"):
        windows.place(torch_lib, [Placement(torch_lib / "nope.dll", "cublas64_11.dll")])
    with pytest.raises(PlacementError, match=r"^nvrtc64_120_0\.dll .* nvrtc_cuda\.dll\b"):
        windows.place(torch_lib, [Placement(dlls["zluda/nvrtc.dll"], "nvrtc64_120_0.dll", "nvrtc_cuda.dll")])
    assert windows.status(torch_lib).state == "none"
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()


def test_zluda_exe_argv(tmp_path: Path) -> None:
    (tmp_path / "ZLUDA.exe").write_bytes(b"MZ")
    argv = windows.zluda_exe_argv(tmp_path, ["python", "infer.py", "--x"])
    assert argv == [str(tmp_path / "ZLUDA.exe"), "--", "python", "infer.py", "--x"]
    with pytest.raises(LaunchError, match=r"no zluda\.exe"):
        windows.zluda_exe_argv(tmp_path / "missing", ["python"])


# ------------------------------------------------ issue 11 regressions, antivirus, journal faults


@pytest.fixture
def cli_runner():  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from zluda_runner.cli import main_group

    runner = CliRunner()
    return lambda args: runner.invoke(main_group, args)


def journal_path(torch_lib: Path) -> Path:
    return torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE


def edit_journal(torch_lib: Path, change) -> None:  # type: ignore[no-untyped-def]
    path = journal_path(torch_lib)
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_restore_keeps_a_file_another_tool_wrote_and_force_never_replaces_it(torch_lib: Path, placements,
                                                                              dlls) -> None:
    """Issue 29: a file written since placement is the other tool's: kept, the rest put back."""
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    (torch_lib / "cublas64_11.dll").write_bytes(b"MZ changed by another tool")
    result = windows.restore(torch_lib)
    assert result.kept == ["cublas64_11.dll"]
    assert (torch_lib / "cublas64_11.dll").read_bytes() == b"MZ changed by another tool"
    assert snapshot(torch_lib) == {**before, "cublas64_11.dll": snapshot(torch_lib)["cublas64_11.dll"]}
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()


def test_journal_paths_must_stay_inside_torch_lib_and_the_journal(torch_lib: Path, placements) -> None:
    """Issue 11 defect 8: names and saved paths from the journal are never trusted as paths."""
    victim = torch_lib.parent.parent / "VICTIM.txt"
    victim.write_text("keep me")
    windows.place(torch_lib, placements)
    placed = snapshot(torch_lib)
    edit_journal(torch_lib, lambda d: d["entries"][0].update(name="../../VICTIM.txt"))
    with pytest.raises(PlacementError, match="damaged") as info:
        windows.restore(torch_lib)
    assert info.value.hint and victim.read_text() == "keep me" and snapshot(torch_lib) == placed
    edit_journal(torch_lib, lambda d: d["entries"][0].update(name="cublas64_11.dll", saved="/etc/hostname"))
    with pytest.raises(PlacementError, match="damaged"):
        windows.restore(torch_lib)
    edit_journal(torch_lib, lambda d: d["entries"][0].update(saved="originals/../../../../etc/hostname"))
    with pytest.raises(PlacementError, match="damaged"):
        windows.status(torch_lib)
    assert snapshot(torch_lib) == placed


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda p: p.write_bytes(bytes(range(256)) * 8),  # random bytes
        lambda p: p.write_text(p.read_text().replace('"name": "cublas64_11.dll"', '"name": null')),
        lambda p: p.write_text(json.dumps([1, 2])),
        lambda p: p.write_text(p.read_text().replace('"entries": [', '"entries": [7, ')),
        lambda p: p.write_text(p.read_text().replace('"size": ', '"size": "x", "was": ', 1)),
        lambda p: p.write_text("[" * 100000),
    ],
    ids=["random-bytes", "null-name", "a-list", "entry-not-object", "size-not-int", "deep-nesting"],
)
def test_journal_corruption_is_a_clear_error(torch_lib: Path, placements, corrupt, cli_runner) -> None:
    """Issue 11 defect 11: never a traceback from restore or status."""
    windows.place(torch_lib, placements)
    placed = snapshot(torch_lib)
    path = journal_path(torch_lib)
    corrupt(path)
    for call in (windows.restore, windows.status):
        with pytest.raises(PlacementError, match=r"journal .* is damaged") as info:
            call(torch_lib)
        assert "originals" in (info.value.hint or "")
    for args in (["restore", "--torch-lib", str(torch_lib)], ["status", "--torch-lib", str(torch_lib)]):
        result = cli_runner(args)
        assert result.exit_code == 1 and "Traceback" not in result.output and "damaged" in result.output
    assert snapshot(torch_lib) == placed


def test_restore_removes_temp_files_of_a_killed_placement(torch_lib: Path, placements) -> None:
    """Issue 11 defect 18: a killed copy leaves a temp file; a successful restore removes it."""
    before = snapshot(torch_lib)
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(1))
    # what a placement killed inside a copy leaves: the old tag (<= this fix) and fsutil's
    (torch_lib / ".nvrtc64_112_0.dll.zluda-runner-tmp-4242").write_bytes(b"partial" * 1000)
    (torch_lib / ".tmp-cusparse64_11.dll.k2j3h4").write_bytes(b"partial")
    (torch_lib / ".tmp-notours.dll.x").write_bytes(b"a user's file")
    windows.restore(torch_lib)
    assert snapshot(torch_lib) == {**before, ".tmp-notours.dll.x": sha(torch_lib / ".tmp-notours.dll.x")}


@pytest.mark.parametrize("k", [1, 2, 3])
def test_status_advice_on_an_interrupted_placement_holds(torch_lib: Path, placements, dlls, k: int) -> None:
    """Issue 11 defect 19: what status promises for the next run is what the next run does."""
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(k))
    st = windows.status(torch_lib)
    assert st.state == "in-progress" and st.needs_replace
    assert st.next_run == "re-place" and "interrupted" in st.advice
    result = windows.place(torch_lib, placements)  # the next run: does what status said
    assert not result.already_placed and any("interrupted" in w for w in result.warnings)
    assert sha(torch_lib / "cublas64_11.dll") == sha(dlls["zluda/cublas.dll"])
    assert windows.status(torch_lib, deep=True).next_run == "nothing"


def test_status_advice_when_the_next_run_must_refuse(torch_lib: Path, placements) -> None:
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(2))
    shutil.rmtree(torch_lib / windows.JOURNAL_DIRNAME / windows.ORIGINALS_DIR)
    st = windows.status(torch_lib)
    jdir = torch_lib / windows.JOURNAL_DIRNAME
    assert st.next_run == "refuse" and str(jdir) in st.advice  # the folder to delete once torch is back
    with pytest.raises(PlacementError) as refused:
        windows.place(torch_lib, placements)
    assert refused.value.kind == "placement" and str(jdir / windows.ORIGINALS_DIR) in refused.value.message
    assert str(jdir) in (refused.value.hint or "")


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_antivirus_quarantine_named_restored_and_replaced(torch_lib: Path, placements, dlls,
                                                          how: str) -> None:
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    victim = torch_lib / "cublas64_11.dll"
    if how == "missing":
        victim.unlink()
    else:
        victim.write_bytes(b"")
    st = windows.status(torch_lib)
    assert st.quarantined == ["cublas64_11.dll"] and st.needs_replace and st.next_run == "re-place"
    assert {f.name: f.state for f in st.files}["cublas64_11.dll"] == how
    assert "antivirus" in st.drift[0] and "antivirus" in st.advice
    result = windows.place(torch_lib, placements)  # the next run re-places, with a warning
    assert "cublas64_11.dll" in result.placed and any("antivirus" in w for w in result.warnings)
    assert sha(victim) == sha(dlls["zluda/cublas.dll"])
    victim.unlink()  # quarantined again: restore recovers NVIDIA's file
    windows.restore(torch_lib)
    assert snapshot(torch_lib) == before


def test_a_journal_with_a_flipped_hash_loses_no_original(torch_lib: Path, placements, dlls) -> None:
    """Issue 11 defect 1's other cause: one flipped character in the journal's placed hash. The
    placed file then looks changed, but it is the very file placed: restore puts NVIDIA's back."""
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    edit_journal(torch_lib, lambda d: d["entries"][0]["placed"].update(sha256="0" * 64))
    assert windows.status(torch_lib, deep=True).next_run == "re-place"
    assert windows.restore(torch_lib).kept == []  # the very file placed (size, mtime, inode): ours
    assert snapshot(torch_lib) == before


def test_replacing_after_a_flipped_hash_keeps_nvidia_s_original(torch_lib: Path, placements) -> None:
    """The next run re-places (status said so); ZLUDA's file is recognised as ours, not adopted."""
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    edit_journal(torch_lib, lambda d: d["entries"][0]["placed"].update(sha256="0" * 64))
    edit_journal(torch_lib, lambda d: d["entries"][0].update(placed_stat=None))  # force a hash check
    result = windows.place(torch_lib, placements)
    assert not result.already_placed and "cublas64_11.dll" in result.restored_first
    windows.restore(torch_lib)
    assert snapshot(torch_lib) == before


def test_status_cli_exit_codes(torch_lib: Path, placements, cli_runner) -> None:
    windows.place(torch_lib, placements)
    assert cli_runner(["status", "--torch-lib", str(torch_lib)]).exit_code == 0
    (torch_lib / "cusparse64_11.dll").unlink()
    result = cli_runner(["status", "--torch-lib", str(torch_lib)])
    assert result.exit_code == 3 and "antivirus" in result.output
    (torch_lib / "cublas64_11.dll").write_bytes(b"MZ another")
    result = cli_runner(["--json", "restore", "--torch-lib", str(torch_lib)])
    assert result.exit_code == 0 and json.loads(result.output)["kept"] == ["cublas64_11.dll"]


def test_the_global_force_never_replaces_a_file_we_did_not_place(torch_lib: Path, placements,
                                                                  cli_runner) -> None:
    """One meaning of --force (issues 21, 29): `zluda-run --force restore` keeps another's file too."""
    windows.place(torch_lib, placements)
    (torch_lib / "cublas64_11.dll").write_bytes(b"MZ another")
    result = cli_runner(["--json", "--force", "restore", "--torch-lib", str(torch_lib)])
    assert result.exit_code == 0 and json.loads(result.output)["kept"] == ["cublas64_11.dll"]
    assert (torch_lib / "cublas64_11.dll").read_bytes() == b"MZ another"


# ---------------------------------------------------------------- files in use (Windows: a loaded DLL)


class Holder:
    """An injected in-use check: ``names`` are held by "app.exe (pid 7)". It records what it was
    asked, and the folder as it was at that moment (the check must come before any change)."""

    def __init__(self, folder: Path, *names: str) -> None:
        self.folder, self.names = folder, set(names)
        self.asked: list[str] = []
        self.seen: list[dict[str, str]] = []

    def __call__(self, paths):  # type: ignore[no-untyped-def]
        from zluda_runner.core.replace import IN_USE, InUse

        self.asked.extend(p.name for p in paths)
        self.seen.append(snapshot(self.folder))
        return [InUse(str(p), IN_USE, ("app.exe (pid 7)",)) for p in paths if p.name in self.names]


def test_restore_with_one_file_in_use_refuses_whole_and_names_it(torch_lib: Path, placements) -> None:
    from zluda_runner.core.errors import FileInUseError
    from zluda_runner.core.exitcodes import ERROR

    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    placed = snapshot(torch_lib)
    journal = (torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE).read_bytes()
    held = Holder(torch_lib, "cusparse64_11.dll")  # the second of the files restore puts back
    with pytest.raises(FileInUseError) as info:
        windows.restore(torch_lib, check=held)
    err = info.value
    assert err.exit_code == ERROR and err.paths == (str(torch_lib / "cusparse64_11.dll"),)
    assert "app.exe (pid 7)" in err.message  # the program holding it (the snapshots show nothing changed)
    assert err.hint == "close app.exe (pid 7), then retry"
    assert sorted(held.asked) == ["cublas64_11.dll", "cusparse64_11.dll", "nvrtc64_112_0.dll",
                                  "nvrtc_cuda.dll"]
    assert held.seen == [placed]  # asked once, before anything changed
    assert snapshot(torch_lib) == placed  # nothing put back, nothing deleted
    assert (torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE).read_bytes() == journal
    assert not windows.status(torch_lib).needs_replace
    windows.restore(torch_lib, check=Holder(torch_lib))  # once free: exact
    assert snapshot(torch_lib) == before


def test_place_with_one_file_in_use_refuses_before_any_change(torch_lib: Path, placements) -> None:
    from zluda_runner.core.errors import FileInUseError

    before = snapshot(torch_lib)
    with pytest.raises(FileInUseError, match=r"cusparse64_11\.dll"):
        windows.place(torch_lib, placements, check=Holder(torch_lib, "cusparse64_11.dll"))
    assert snapshot(torch_lib) == before
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()  # no journal, no saved originals


def test_re_placing_a_drifted_placement_with_a_file_in_use_changes_nothing(torch_lib: Path, placements,
                                                                           dlls) -> None:
    from zluda_runner.core.errors import FileInUseError

    windows.place(torch_lib, placements)
    (torch_lib / "cublas64_11.dll").unlink()  # quarantined: the next place would put back, then re-place
    drifted = snapshot(torch_lib)
    held = Holder(torch_lib, "nvrtc_cuda.dll")
    with pytest.raises(FileInUseError, match=r"nvrtc_cuda\.dll"):
        windows.place(torch_lib, placements, check=held)
    assert held.seen == [drifted] and snapshot(torch_lib) == drifted
    assert windows.status(torch_lib).quarantined == ["cublas64_11.dll"]  # the journal as it was


def test_an_intact_placement_asked_again_is_not_refused_for_a_loaded_dll(torch_lib: Path, placements) -> None:
    windows.place(torch_lib, placements)
    again = windows.place(torch_lib, placements, check=Holder(torch_lib, "cublas64_11.dll"))
    assert again.already_placed  # nothing to write: a running app using ZLUDA is no reason to fail
