"""Whose a file in torch/lib is, as the journal tells it (issue 29, the Windows user's journey).

* A DLL pip wrote over a placed one (a torch upgrade) is pip's: ``restore`` puts back what is still
  zluda-run's and keeps pip's file, ``--force`` too; on 7859508 ``restore`` exited 3 and
  ``restore --force`` put the pre-upgrade original over pip's new DLL.
* The ``.pth`` hooks go once no placement remains (on 7859508 a restore after drift left
  ``zluda_runner_defaults.pth``), and stay while one does.
* ``status`` after an interrupted ``place`` or a restore stopped half-way says zluda-run did it
  (``by``), not an antivirus (``quarantined``) or pip.

Pure file logic on the stand-in torch/lib of tests/launch/test_windows_placement.py; the same journey
on the real Windows CPython under Wine is tests/windows/test_wine_restore_journey.py.
"""

# ruff: noqa: F811  (the fixtures are imported from the sibling test module, then requested by name)
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.launch.test_windows_placement import (  # noqa: F401
    Crash,
    crash_after,
    dlls,
    placements,
    snapshot,
    torch_lib,
)
from zluda_runner.cli import main_group
from zluda_runner.launch import windows
from zluda_runner.launch.windows import journal as journal_mod
from zluda_runner.launch.windows import restoring
from zluda_runner.launch.windows.hook import install_defaults_hook, install_pth_hook
from zluda_runner.plan.model import AppliedDefault

CUDNN_OFF = AppliedDefault("cudnn-off", "torch.backends.cudnn.enabled=False", "startup", "a test", "a test")


def pip_writes(path: Path, content: bytes) -> None:
    """What pip does to a file it installs: a new file renamed over the old one (a new inode)."""
    tmp = path.with_name(path.name + ".pip-tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)


def test_restore_keeps_the_dll_pip_wrote_and_puts_back_the_rest(torch_lib: Path, placements, dlls) -> None:
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    upgraded = dlls["torch2/cublas64_11.dll"].read_bytes()
    pip_writes(torch_lib / "cublas64_11.dll", upgraded)
    assert windows.status(torch_lib).files[0].by == journal_mod.BY_OTHER  # pip's doing: not zluda-run's
    result = windows.restore(torch_lib)
    assert result.kept == ["cublas64_11.dll"]
    assert sorted(result.restored) == ["cusparse64_11.dll", "nvrtc64_112_0.dll"]
    assert result.removed == ["nvrtc_cuda.dll"]
    assert (torch_lib / "cublas64_11.dll").read_bytes() == upgraded  # pip's file is not lost
    after = snapshot(torch_lib)
    assert after == {**before, "cublas64_11.dll": after["cublas64_11.dll"]}
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists()  # nothing of ours is left to restore


@pytest.mark.parametrize("argv", [["restore", "--force"], ["--force", "restore"]])
def test_force_never_replaces_a_file_zluda_run_did_not_place(torch_lib: Path, placements, dlls,
                                                              argv: list[str]) -> None:
    windows.place(torch_lib, placements)
    upgraded = dlls["torch2/cublas64_11.dll"].read_bytes()
    pip_writes(torch_lib / "cublas64_11.dll", upgraded)
    out = CliRunner().invoke(main_group, ["--json", *argv, "--torch-lib", str(torch_lib)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["kept"] == ["cublas64_11.dll"] and data["complete"] is True  # schema 1's key, deprecated
    assert ("restore --force" in out.stderr) == (argv[0] == "restore")  # the deprecated option says so
    assert "skipped" not in data and "journal_kept" not in data
    assert (torch_lib / "cublas64_11.dll").read_bytes() == upgraded


def test_the_deprecated_force_and_complete_warn_and_change_nothing(torch_lib: Path, placements,
                                                                    dlls) -> None:
    """``restore(force=...)`` and ``RestoreResult.complete`` are deprecated (docs/api.md): each warns where
    it is used (on 7859508 neither did: a parameter and a field that meant nothing, silently), and the
    restore with ``force`` is the restore without it."""
    import zluda_runner as zr

    results = []
    for force in (None, True):
        windows.place(torch_lib, placements)
        pip_writes(torch_lib / "cublas64_11.dll", f"MZ pip's, after {force}".encode())
        with warnings.catch_warnings(record=True) as heard:
            warnings.simplefilter("always")
            results.append(zr.restore(torch_lib) if force is None else zr.restore(torch_lib, force=force))
        assert [(w.category, Path(w.filename).name) for w in heard] == (
            [] if force is None else [(DeprecationWarning, Path(__file__).name)])  # the caller's line
    assert [r.to_dict() for r in results] == [results[0].to_dict()] * 2
    assert results[0].kept == ["cublas64_11.dll"]
    with pytest.warns(DeprecationWarning):
        assert results[0].complete is True
    assert restoring.RestoreResult.from_dict(results[0].to_dict()) == results[0]  # the JSON key read back


def test_hooks_go_with_the_last_placement_after_drift(torch_lib: Path, placements, dlls,
                                                      tmp_path: Path) -> None:
    site, cache = torch_lib.parent.parent, tmp_path / "cache"
    windows.place(torch_lib, placements)
    hooks = [install_pth_hook(site, cache), install_defaults_hook(site, [CUDNN_OFF], cache)]
    assert all(h is not None and h.exists() for h in hooks)
    pip_writes(torch_lib / "cublas64_11.dll", dlls["torch2/cublas64_11.dll"].read_bytes())
    result = windows.restore(torch_lib, cache_dir=cache)
    assert sorted(result.removed) == sorted(["nvrtc_cuda.dll", *(str(h) for h in hooks)])
    assert not any(h is not None and h.exists() for h in hooks)
    assert json.loads((cache / "win-hooks" / "hooks.json").read_text())["hooks"] == []


def test_hooks_stay_while_a_placement_remains(torch_lib: Path, placements, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    site, cache = torch_lib.parent.parent, tmp_path / "cache"
    windows.place(torch_lib, placements)
    hook = install_defaults_hook(site, [CUDNN_OFF], cache)
    stopping_after(monkeypatch, 1)
    with pytest.raises(windows.PlacementError):
        windows.restore(torch_lib, cache_dir=cache)
    assert hook is not None and hook.exists()  # the rest of the placement still needs its defaults
    monkeypatch.undo()
    assert str(hook) in windows.restore(torch_lib, cache_dir=cache).removed and not hook.exists()


class stopping_after:
    """``move_into`` that fails (a full disk) after ``k`` files were put back: a restore stopped half-way."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, k: int) -> None:
        self.real, self.k, self.done = restoring.move_into, k, 0
        monkeypatch.setattr(restoring, "move_into", self)

    def __call__(self, *args: object, **kwargs: object) -> None:
        if self.done == self.k:
            raise OSError(28, "No space left on device")
        self.done += 1
        self.real(*args, **kwargs)  # type: ignore[arg-type]


def by_name(st: windows.PlacementStatus) -> dict[str, tuple[str, str | None]]:
    return {f.name: (f.state, f.by) for f in st.files}


def test_status_after_a_restore_stopped_half_way_says_zluda_run_put_files_back(
        torch_lib: Path, placements, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    stopping_after(monkeypatch, 1)
    with pytest.raises(windows.PlacementError):
        windows.restore(torch_lib)
    monkeypatch.undo()
    st = windows.status(torch_lib, deep=True)
    assert st.state == journal_mod.RESTORING and st.quarantined == []
    # put back last placed first: nvrtc_cuda.dll removed (it was not there), nvrtc64's original moved back
    assert by_name(st) == {
        "cublas64_11.dll": ("placed", None), "cusparse64_11.dll": ("placed", None),
        "nvrtc64_112_0.dll": ("original", journal_mod.BY_RESTORING),
        "nvrtc_cuda.dll": ("missing", journal_mod.BY_RESTORING),
    }
    assert st.needs_replace and st.next_run == restoring.NEXT_REPLACE
    out = CliRunner().invoke(main_group, ["--json", "status", "--torch-lib", str(torch_lib)])
    assert out.exit_code == 3 and json.loads(out.output)["state"] == "restoring"
    result = windows.restore(torch_lib)  # finishes exactly
    assert sorted(result.unchanged) == ["nvrtc64_112_0.dll", "nvrtc_cuda.dll"] and result.kept == []
    assert snapshot(torch_lib) == before and not (torch_lib / windows.JOURNAL_DIRNAME).exists()


def test_placing_after_a_restore_stopped_half_way_says_so(torch_lib: Path, placements,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    windows.place(torch_lib, placements)
    stopping_after(monkeypatch, 2)
    with pytest.raises(windows.PlacementError):
        windows.restore(torch_lib)
    monkeypatch.undo()
    placed = snapshot(torch_lib)
    again = windows.place(torch_lib, placements)
    assert len(again.warnings) == 1  # the stopped restore; no file blamed on another program
    assert windows.status(torch_lib, deep=True).state == windows.PLACED
    assert snapshot(torch_lib) != placed and not (torch_lib / windows.JOURNAL_DIRNAME / "restoring").exists()


@pytest.mark.parametrize("k", [1, 2])
def test_status_after_an_interrupted_place_says_the_placement_stopped(torch_lib: Path, placements,
                                                                      k: int) -> None:
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(k))
    st = windows.status(torch_lib, deep=True)
    assert st.state == windows.IN_PROGRESS and st.quarantined == []
    states = by_name(st)
    written = list(states)[:k]
    assert all(states[n] == ("placed", None) for n in written)
    assert all(states[n][1] == journal_mod.BY_PLACING for n in states if n not in written)
    out = CliRunner().invoke(main_group, ["--json", "status", "--torch-lib", str(torch_lib)])
    data = json.loads(out.output)
    assert out.exit_code == 3 and data["quarantined"] == []
    assert {f["name"]: f["by"] for f in data["files"]} == {n: by for n, (_s, by) in states.items()}


def test_a_file_an_antivirus_took_during_an_interrupted_place_is_still_blamed_on_it(
        torch_lib: Path, placements) -> None:
    with pytest.raises(Crash):
        windows.place(torch_lib, placements, after_each=crash_after(1))
    (torch_lib / "cublas64_11.dll").unlink()  # placed, then quarantined: not zluda-run's doing
    st = windows.status(torch_lib, deep=True)
    assert st.quarantined == ["cublas64_11.dll"]
    assert by_name(st)["cublas64_11.dll"] == ("missing", journal_mod.BY_OTHER)
