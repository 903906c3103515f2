"""The placement lock of a torch/lib: concurrent place/restore, and what a killed placement leaves
(issue 20, nothing-lost items 16 and 22).

16: a process waiting for ``.zluda-runner/lock`` died with FileNotFoundError once the holder's restore
removed ``.zluda-runner``. The waiter must take the lock anew and go on. No timing: the holder is a
restore stopped inside the lock (its in-use check waits on an event); the waiter is let go only once
it has opened the lock file, which both the old lock (filelock, polling) and the new one (a blocking
flock) do before waiting. 22: a placement killed before it wrote its journal left an empty
``.zluda-runner/lock`` that nothing removed; ``restore`` now removes it (unless a live process holds
it). Both fail on 5c673db."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.launch.test_windows_placement import dlls, placements, snapshot, torch_lib  # noqa: F401
from zluda_runner.core.errors import PlacementError
from zluda_runner.launch import windows
from zluda_runner.launch.windows import restoring as windows_restore

Outcome = dict[str, Any]


def _thread(target: Callable[[], object], out: Outcome) -> threading.Thread:
    def run() -> None:
        try:
            out["result"] = target()
        except BaseException as exc:
            out["error"] = exc

    return threading.Thread(target=run, daemon=True)


def _race(torch_lib: Path, placements, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
          waiter: Callable[[], object]) -> tuple[Outcome, Outcome]:
    """A restore holds the lock; ``waiter`` (another place/restore) waits for it; the restore then
    finishes and removes .zluda-runner. Returns (restore's outcome, the waiter's)."""
    windows.place(torch_lib, placements)
    lock_path = str(torch_lib / windows.JOURNAL_DIRNAME / "lock")
    in_lock, go, waiting = threading.Event(), threading.Event(), threading.Event()
    waiter_thread: list[threading.Thread] = []

    real_restore_entries = windows_restore.restore_entries

    def held(*args: Any, **kwargs: Any) -> Any:  # called inside the lock
        if threading.current_thread() is restoring:
            in_lock.set()
            assert go.wait(60), "the waiter never reached the lock"
        return real_restore_entries(*args, **kwargs)

    real_open = os.open

    def spying_open(path: Any, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, *args, **kwargs)
        if waiter_thread and threading.current_thread() is waiter_thread[0] and os.fspath(path) == lock_path:
            waiting.set()  # the waiter has the lock file open: it waits on it from here
        return fd

    monkeypatch.setattr(os, "open", spying_open)
    monkeypatch.setattr(windows_restore, "restore_entries", held)
    first: Outcome = {}
    second: Outcome = {}
    restoring = _thread(lambda: windows.restore(torch_lib), first)
    restoring.start()
    assert in_lock.wait(60)
    waiter_thread.append(_thread(waiter, second))
    waiter_thread[0].start()
    assert waiting.wait(60), second
    go.set()
    restoring.join(60)
    waiter_thread[0].join(60)
    assert not restoring.is_alive() and not waiter_thread[0].is_alive()
    assert "error" not in first, first
    return first, second


def test_a_place_waiting_while_restore_removes_the_journal_folder_takes_the_lock_anew(
        torch_lib: Path, placements, dlls, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    originals = snapshot(torch_lib)
    _first, second = _race(torch_lib, placements, monkeypatch, lambda: windows.place(torch_lib, placements))
    assert "error" not in second, "".join(traceback.format_exception(second["error"]))  # FileNotFoundError
    assert second["result"].placed  # it placed after the restore: a journal of its own, whole
    st = windows.status(torch_lib, placements=placements, deep=True)
    assert st.state == "placed" and not st.drift and not st.needs_replace
    monkeypatch.undo()
    windows.restore(torch_lib)
    assert snapshot(torch_lib) == originals and not (torch_lib / windows.JOURNAL_DIRNAME).exists()


def test_a_restore_waiting_while_another_restore_finishes_says_it_was_restored_meanwhile(
        torch_lib: Path, placements, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    _first, second = _race(torch_lib, placements, monkeypatch, lambda: windows.restore(torch_lib))
    assert isinstance(second.get("error"), windows_restore.NothingToRestoreError), repr(second.get("error"))
    assert second["error"].kind == "nothing-to-restore" and str(torch_lib) in second["error"].message
    assert not (torch_lib / windows.JOURNAL_DIRNAME).exists(), "no trace left"


KILLED_PLACE = """
import os, sys
from pathlib import Path
from zluda_runner.launch.windows import placing as windows_place
from zluda_runner.launch.windows import Placement, place
lib, dll = Path(sys.argv[1]), Path(sys.argv[2])
def die(*args):  # killed inside the lock, just before the journal would be written
    os._exit(9)
windows_place.write_journal = die
place(lib, [Placement(dll, "cublas64_11.dll")])
"""


def test_restore_removes_the_lock_a_placement_killed_before_its_journal_left(
        torch_lib: Path, dlls) -> None:  # noqa: F811
    before = snapshot(torch_lib)
    out = subprocess.run([sys.executable, "-c", KILLED_PLACE, str(torch_lib), str(dlls["zluda/cublas.dll"])],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert out.returncode == 9, out.stderr
    jdir = torch_lib / windows.JOURNAL_DIRNAME
    assert sorted(os.listdir(jdir)) == ["lock"]  # what the killed placement left
    with pytest.raises(PlacementError) as info:
        windows.restore(torch_lib)
    assert str(torch_lib / windows.JOURNAL_DIRNAME / windows.JOURNAL_FILE) in info.value.message
    assert info.value.message.count(str(jdir)) == 2  # the journal it looked for, and the folder it removed
    assert not jdir.exists()
    assert snapshot(torch_lib) == before


def test_a_lock_held_by_a_live_placement_is_not_swept(torch_lib: Path) -> None:  # noqa: F811
    from zluda_runner.launch.windows.journal import JournalLock

    jdir = torch_lib / windows.JOURNAL_DIRNAME
    with JournalLock(jdir):  # a placement running now, before its journal
        with pytest.raises(PlacementError) as info:
            windows.restore(torch_lib)
        assert info.value.message.count(str(jdir)) == 1  # the journal it looked for; nothing removed
        assert (jdir / "lock").exists()
    assert (jdir / "lock").exists()  # released without drop: left for the next restore
    with pytest.raises(PlacementError):
        windows.restore(torch_lib)
    assert not jdir.exists()
