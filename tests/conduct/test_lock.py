"""The lock is data, read like a manifest: bounded, validated field by field (the field at fault named,
unknown fields refused), round-tripped exactly; the release's files hashed and their changes named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from zluda_runner.core.errors import LockError
from zluda_runner.release.lockfile import (
    MAX_LOCK_BYTES,
    Lock,
    LockedCriterion,
    LockedHost,
    LockedRelease,
    LockedSetting,
    changed_files,
    hash_tree,
    read_lock,
    write_lock,
)


def _release(tmp_path: Path) -> Path:
    root = tmp_path / "zluda"
    root.mkdir()
    (root / "libcuda.so.1").write_bytes(b"\x7fELF stand-in")
    os.symlink("libcuda.so.1", root / "libcuda.so")
    return root


def _lock(root: Path) -> Lock:
    return Lock(
        release=LockedRelease("dir", str(root), root=str(root), files=hash_tree(root)),
        variant="cudnn-off", mechanism="ld_library_path",
        settings=(LockedSetting("cudnn-off", "torch.backends.cudnn.enabled = False", True, "a variant"),),
        host=LockedHost(os="linux", gfx="gfx1100", hip_version="6.2", torch="2.7.0", torch_cuda="12.8"),
        workload=("python", "infer.py"),
        criteria=(LockedCriterion("ran", "pass", "all 1 runs exited 0", ("run 1: exit 0",)),
                  LockedCriterion("on the GPU", "not shown", "not shown: no GPU telemetry")),
        not_proven=("not proven on the GPU: no telemetry",), env={"ZLUDA_RUNNER_TORCH_DEFAULTS": "cudnn-off"},
    )


def test_a_lock_round_trips_and_its_files_are_hashed(tmp_path: Path) -> None:
    root = _release(tmp_path)
    lock = _lock(root)
    assert [(f.path, f.link, bool(f.sha256)) for f in lock.release.files] == [
        ("libcuda.so", "libcuda.so.1", False), ("libcuda.so.1", None, True)]
    write_lock(lock, tmp_path / "zluda.lock")
    assert read_lock(tmp_path / "zluda.lock") == lock
    assert changed_files(lock.release, root) == []
    (root / "libcuda.so.1").write_bytes(b"\x7fELF changed")
    assert changed_files(lock.release, root) == [(str(root / "libcuda.so.1"), "sha256")]
    (root / "libcuda.so").unlink()
    assert changed_files(lock.release, root)[0] == (str(root / "libcuda.so"), "missing")


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.pop("variant"), "the lock: field 'variant' is missing"),
    (lambda d: d.update(variant="turbo"), "the lock: field 'variant' must be one of"),
    (lambda d: d.update(schema=3), "the lock: field 'schema' is 3"),
    (lambda d: d.update(sha265="x"), "the lock: field 'sha265' is not part of the schema"),
    (lambda d: d["release"]["files"][1].update(sha256="abc"),
     "release: files[1]: field 'sha256' is malformed"),
    (lambda d: d["release"]["files"][0].update(path="../x"),
     "release: files[0]: field 'path' must be relative"),
    (lambda d: d["criteria"][0].update(status="maybe"), "criteria[0]: field 'status' must be one of"),
    (lambda d: d["host"].update(gfx=7), "host: field 'gfx' must be a non-empty string"),
    (lambda d: d.update(env={"A B": "1"}), "the lock: field 'env' must be an object"),
    (lambda d: d.update(workload=[]), "the lock: field 'workload' must not be empty"),
])
def test_a_bad_field_is_named(tmp_path: Path, edit, field: str) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(_lock(_release(tmp_path)).to_json())
    edit(data)
    path = tmp_path / "zluda.lock"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(LockError) as info:
        read_lock(path)
    assert info.value.kind == "lock"
    assert field in info.value.message, info.value.message


def test_what_is_not_a_lock_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "big.lock"
    big.write_bytes(b" " * (MAX_LOCK_BYTES + 1))
    deep = tmp_path / "deep.lock"
    deep.write_text("[" * 50 + "]" * 50, encoding="utf-8")
    for path, said in ((big, "more than"), (deep, "nests deeper"), (tmp_path, "not a regular file"),
                       (tmp_path / "none.lock", "not found")):
        with pytest.raises(LockError) as info:
            read_lock(path)
        assert said in info.value.message, info.value.message


def test_a_schema_1_lock_reads_as_one_without_a_hip_folder(tmp_path: Path) -> None:
    """Locks written before the HIP folder was kept (schema 1) still read; one written now keeps it."""
    lock = _lock(_release(tmp_path))
    data = json.loads(lock.to_json())
    data["schema"] = 1
    del data["host"]["hip_path"]
    (tmp_path / "old.lock").write_text(json.dumps(data), encoding="utf-8")
    old = read_lock(tmp_path / "old.lock")
    assert old.schema == 1 and old.host.hip_path is None and old.host == lock.host
    host = LockedHost(os="linux", hip_version="6.2", hip_path="/opt/rocm-6.2.0")
    kept = Lock(**{**lock.__dict__, "host": host})
    write_lock(kept, tmp_path / "new.lock")
    assert read_lock(tmp_path / "new.lock").host.hip_path == "/opt/rocm-6.2.0" and kept.schema == 2
