"""`cache clean` removes only what zluda-runner recorded as its own (issue 20, "nothing lost" item 1).

``--cache-dir`` may be any folder, a home-like one included: a ``downloads/``, ``tmp/`` or ``releases/``
there holds the user's files. Only a completion marker's folder and archive, a partial download with its
note and a work folder named as zluda-runner names them are removed; a symlinked area is not entered.
These tests fail on 5c673db (the user's files were deleted, the link's target emptied)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.release.test_cli import setup  # noqa: F401  (the fixture: a manifest served by a file:// mirror)


def _user_files(root: Path) -> dict[str, bytes]:
    files = {
        "downloads/thesis.pdf": b"%PDF my thesis",
        "downloads/photos/cat.jpg": b"JPEG cat",
        "tmp/notes.txt": b"notes",
        "tmp/upstream-v6/draft.txt": b"a folder named like a release, not made by zluda-runner",
        "releases/2024/changelog.md": b"# my project's releases",
        "releases/upstream-v6/mine.txt": b"the user's file beside a release folder",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def _still_there(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        assert (root / rel).read_bytes() == data, rel


def test_clean_keeps_a_home_like_cache_folders_own_files(setup) -> None:  # noqa: F811
    run, cache, _payload, _ = setup
    mine = _user_files(cache)
    res = run("cache", "list", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["releases"] == []
    res = run("cache", "clean")  # "no releases cached": nothing of ours, nothing removed
    assert res.exit_code == 0, res.output
    _still_there(cache, mine)
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    assert run("fetch", "v7", "--os", "linux", "--trust-on-first-use").exit_code == 0
    unpacked = cache / "releases" / "upstream-v6" / "zluda-linux-test"
    assert unpacked.is_dir()
    res = run("cache", "clean", "upstream-v6")
    assert res.exit_code == 0, res.output
    assert not unpacked.exists() and not (cache / "downloads" / "upstream-v6").exists()
    _still_there(cache, mine)  # releases/upstream-v6/mine.txt too: only the recorded entries went
    res = run("cache", "clean")
    assert res.exit_code == 0, res.output
    assert not (cache / "releases" / "upstream-v7").exists()
    assert json.loads(run("cache", "list", "--json").stdout)["releases"] == []
    _still_there(cache, mine)


def test_clean_does_not_follow_a_symlinked_area_out_of_the_cache(setup, tmp_path: Path) -> None:  # noqa: F811
    run, cache, _payload, _ = setup
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    # what a symlinked releases/ and downloads/ point at: another folder, which zluda-runner does not own
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for area in ("releases", "downloads"):
        os.rename(cache / area, elsewhere / area)
        (cache / area).symlink_to(elsewhere / area, target_is_directory=True)
    (elsewhere / "releases" / "keep.txt").write_bytes(b"keep")
    before = sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*"))
    work = cache / "tmp"
    (tmp_path / "outside-tmp").mkdir()
    (tmp_path / "outside-tmp" / "notes.txt").write_bytes(b"notes")
    if work.exists():
        os.rmdir(work)
    work.symlink_to(tmp_path / "outside-tmp", target_is_directory=True)
    for args in (("cache", "clean"), ("cache", "clean", "upstream-v6")):
        res = run(*args)
        assert res.exit_code == 0, res.output
        assert sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*")) == before, args
        assert (tmp_path / "outside-tmp" / "notes.txt").read_bytes() == b"notes"
