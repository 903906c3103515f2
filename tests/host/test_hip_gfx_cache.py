"""The HIP cffi edge against stand-in runtimes built from C, gfx facts, ZLUDA's compile cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from zluda_runner.host import gfx
from zluda_runner.host.compile_cache import (
    clean_compile_cache,
    compile_cache_dirs,
    inspect_compile_cache,
    user_cache_dir,
)
from zluda_runner.host.hip import arch_name_from_properties, format_hip_version, query_hip, query_hip_isolated


def test_query_hip_reads_devices_from_a_stand_in_runtime(cc_build) -> None:
    lib = cc_build(["host/fake_hip.c"], "libamdhip64.so.6")
    info = query_hip([str(lib)])
    assert info.error is None
    assert info.runtime_version_text == "6.2.41134"
    assert [(d.name, d.gfx, d.gcn_arch_name) for d in info.devices] == [
        ("AMD Radeon 780M Graphics", "gfx1103", "gfx1103"),
        ("AMD Radeon RX 7900 XTX", "gfx1100", "gfx1100:sramecc-:xnack-"),
    ]
    assert info.devices[1].total_memory_bytes == 24 << 30


def test_query_hip_isolated_round_trips_through_a_child(cc_build, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = cc_build(["host/fake_hip.c"], "libamdhip64.so.6")
    info = query_hip_isolated([str(lib)])
    assert [d.gfx for d in info.devices] == ["gfx1103", "gfx1100"]
    # the stand-in, like HIP, hides devices and relabels gfx when told to ...
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    assert [(d.name, d.gfx) for d in query_hip([str(lib)]).devices] == [("AMD Radeon RX 7900 XTX", "gfx1030")]
    # ... but the doctor's isolated query sees every device with its real gfx
    selected = {**os.environ, "ROCR_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "1"}
    for env in (None, selected):
        seen = query_hip_isolated([str(lib)], env=env)
        assert [d.gfx for d in seen.devices] == ["gfx1103", "gfx1100"], seen


def test_query_hip_isolated_survives_a_crashing_or_hanging_runtime(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import os\nos.abort()\n")
    died = query_hip_isolated(python=str(tmp_path / "py-crash"), timeout=5)
    assert died.devices == [] and died.failure == "not-started" and "py-crash" in died.error
    wrapper = tmp_path / "py"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {crash}\n")
    wrapper.chmod(0o755)
    aborted = query_hip_isolated(python=str(wrapper), timeout=30)
    assert aborted.devices == [] and aborted.failure == "died"
    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nexec sleep 30\n")
    hang.chmod(0o755)
    hung = query_hip_isolated(python=str(hang), timeout=0.5)
    assert hung.devices == [] and hung.failure == "timed-out" and hung.error
    chatty = tmp_path / "chatty"
    chatty.write_text('#!/bin/sh\necho "runtime banner"\necho \'{"library": "x", "devices": []}\'\n')
    chatty.chmod(0o755)
    answered = query_hip_isolated(python=str(chatty))
    assert (answered.library, answered.failure, answered.error) == ("x", None, None)


def test_no_device_and_no_library_are_answers_not_errors(cc_build, tmp_path: Path) -> None:
    lib = cc_build(["host/no_device_hip.c"], "libamdhip64.so.5")
    info = query_hip([str(lib)])
    assert info.devices == [] and info.error is None and info.runtime_version_text == "5.7.31921"
    missing = query_hip([str(tmp_path / "libamdhip64.so.7")])
    assert missing.library is None and missing.failure == "not-loadable"
    assert info.failure is None and "libamdhip64.so.7" in missing.error  # the library it looked for


def test_arch_name_scan_needs_a_field_of_its_own() -> None:
    buf = bytearray(2048)
    buf[0:7] = b"gfx9999"  # inside the name field: ignored
    buf[400:410] = b"xxgfx900yy"
    buf[1000:1023] = b"gfx1030:sramecc-:xnack-"
    assert arch_name_from_properties(bytes(buf)) == "gfx1030:sramecc-:xnack-"
    assert arch_name_from_properties(bytes(2048)) is None
    assert format_hip_version(None) is None


@pytest.mark.parametrize(
    ("version", "name"),
    [(110000, "gfx1100"), (100302, "gfx1032"), (90010, "gfx90a"), (90012, "gfx90c"), (0, None)],
)
def test_gfx_from_kfd_target_version(version: int, name: str | None) -> None:
    assert gfx.gfx_from_target_version(version) == name


def test_gfx_facts() -> None:
    assert gfx.override_for("gfx1032").hsa_version == "10.3.0"
    assert gfx.override_for("gfx1102").env == "HSA_OVERRIDE_GFX_VERSION=11.0.0"
    assert gfx.override_for("gfx1100") is None
    assert gfx.hsa_version_to_gfx("10.3.0") == "gfx1030"
    assert gfx.is_rdna_or_newer("gfx1010") and not gfx.is_rdna_or_newer("gfx906")
    assert gfx.generation("gfx1201") == "rdna4" and gfx.generation("gfx90a") == "cdna"
    assert gfx.normalize_gfx("gfx1100:sramecc-:xnack-") == "gfx1100"
    assert gfx.looks_integrated("gfx1103") and gfx.looks_integrated(None, "AMD Radeon(TM) Graphics")
    assert not gfx.looks_integrated("gfx1100", "AMD Radeon RX 7900 XTX")


def test_compile_cache_locations_per_os(tmp_path: Path) -> None:
    home = Path("/home/u")
    assert user_cache_dir("linux", {}, home) == home / ".cache"
    assert user_cache_dir("linux", {"XDG_CACHE_HOME": "/x/c"}, home) == Path("/x/c")
    assert user_cache_dir("linux", {"XDG_CACHE_HOME": "rel"}, home) == home / ".cache"
    assert user_cache_dir("win32", {"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, home) == Path(
        "C:/Users/u/AppData/Local"
    )
    linux = compile_cache_dirs("linux", {}, home)
    assert linux == [home / ".cache/ZLUDA/ComputeCache", home / ".cache/zluda/ComputeCache"]
    assert len(compile_cache_dirs("win32", {"LOCALAPPDATA": "C:/L"}, home)) == 1  # case-insensitive


def test_compile_cache_size_and_clean_touch_only_zluda_db_files(tmp_path: Path) -> None:
    dirs = compile_cache_dirs("linux", {"XDG_CACHE_HOME": str(tmp_path)}, tmp_path)
    dirs[0].mkdir(parents=True)
    (dirs[0] / "zluda.db").write_bytes(b"x" * 1000)
    (dirs[0] / "zluda.db-wal").write_bytes(b"x" * 24)
    (dirs[0] / "notes.txt").write_bytes(b"keep me")
    info = inspect_compile_cache(dirs)
    assert (info.file_count, info.total_bytes) == (2, 1024)
    result = clean_compile_cache(dirs)
    assert result.freed_bytes == 1024 and len(result.removed) == 2
    assert (dirs[0] / "notes.txt").exists()
    assert inspect_compile_cache(dirs).total_bytes == 0


def test_compile_cache_command_shows_and_cleans(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from zluda_runner.commands.fetching import compile_cache_command

    folder = tmp_path / "zluda" / "ComputeCache"
    folder.mkdir(parents=True)
    (folder / "zluda.db").write_bytes(b"x" * 2048)
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    shown = CliRunner().invoke(compile_cache_command, [], env=env)
    assert shown.exit_code == 0 and "zluda.db" in shown.output and "1 file(s), 2.0 KiB" in shown.output
    cleaned = CliRunner().invoke(compile_cache_command, ["--clean"], env=env)
    assert cleaned.exit_code == 0 and "freed 2.0 KiB" in cleaned.output
    assert not (folder / "zluda.db").exists()


def test_a_missing_hip_runtime_is_said_short_on_windows_and_linux() -> None:
    from zluda_runner.host.hip import _load_error_text

    windows = ("cannot load library 'amdhip64_7.dll': error 0x7e.  Additionally, "
               "ctypes.util.find_library() did not manage to locate a library called "
               "'amdhip64_7.dll'")  # cffi's text, as seen under Wine
    assert _load_error_text(windows) == "not found"
    linux = "cannot load library 'libamdhip64.so.6': libamdhip64.so.6: cannot open shared object file"
    assert _load_error_text(linux) == "not found"
    other = "cannot load library 'x.dll': error 0xc1.  Additionally, ctypes.util.find_library() did not"
    assert _load_error_text(other) == "cannot load library 'x.dll': error 0xc1."
