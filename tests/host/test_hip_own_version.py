"""HIP's own version before the package number (issue 29, ROCm 10): AMD's ROCm 10.0.0 numbers its packages
10.x while its HIP is 7.x. Fake trees under tmp (never this machine): a ROCm folder, the Windows HIP SDK."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.core.hipfound import HipFound
from zluda_runner.host import hipsdk
from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipversion import find_host_hip
from zluda_runner.host.quick import hip_found
from zluda_runner.host.rocm import find_rocm
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.selection import resolve

HIP_7_17 = b"#define HIP_VERSION_MAJOR 7\n#define HIP_VERSION_MINOR 17\n#define HIP_VERSION_PATCH 70170\n"
SDK = r"C:\Program Files\AMD\ROCm\10.0"
WIN = {"ProgramFiles": r"C:\Program Files"}


def _write(root: Path, rel: str, data: bytes = b"") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _rocm_10(root: Path, *, header: bool = True) -> None:
    _write(root, "opt/rocm/.info/version", b"10.0.0\n")
    if header:
        _write(root, "opt/rocm/include/hip/hip_version.h", HIP_7_17)


def test_a_rocm_10_folder_is_hip_7_17_read_from_hip_version_h(tmp_path: Path) -> None:
    _rocm_10(tmp_path)
    found = find_host_hip(tmp_path, {}, "linux")
    assert found is not None
    assert (found.version, found.major_minor, found.package) == ("7.17", "7.17", "10.0.0")
    assert found.source == "/opt/rocm/include/hip/hip_version.h"
    assert found.package_source == "/opt/rocm/.info/version"
    said = hip_found({}, tmp_path, "linux")
    assert (said.version, said.text, said.origin) == ("7.17", "HIP 7.17 (ROCm 10.0.0) at /opt/rocm", "rocm")
    rocm = find_rocm(HostFs(tmp_path), {}, "linux")
    assert rocm is not None and (rocm.version, rocm.package) == ("7.17", "10.0.0")
    assert rocm.words() == "HIP 7.17 (ROCm 10.0.0)"


def test_the_runtime_file_name_is_hips_own_version_too(tmp_path: Path) -> None:
    _rocm_10(tmp_path, header=False)
    _write(tmp_path, "opt/rocm/lib/libamdhip64.so.7.17.70170")
    found = find_host_hip(tmp_path, {}, "linux")
    assert found is not None and found.major_minor == "7.17" and found.package == "10.0.0"
    assert found.source == "/opt/rocm/lib/libamdhip64.so.7.17.70170"


def test_where_the_numbers_agree_the_package_text_is_kept_and_shown_once(tmp_path: Path) -> None:
    _write(tmp_path, "opt/rocm/.info/version", b"6.2.4-120\n")
    _write(tmp_path, "opt/rocm/include/hip/hip_version.h",
           b"#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 2\n")
    found = find_host_hip(tmp_path, {}, "linux")
    assert found is not None and (found.version, found.major_minor) == ("6.2.4-120", "6.2")
    assert found.other_package is None
    assert hip_found({}, tmp_path, "linux").text == "ROCm 6.2.4-120 at /opt/rocm"


def test_a_rocm_10_host_gets_the_release_built_for_hip_7(tmp_path: Path) -> None:
    _rocm_10(tmp_path)
    chosen = resolve(load_manifest(), hip_found({}, tmp_path, "linux"), os="linux", cuda=13).require()
    assert chosen.release_id == "upstream-v6"  # ROCm 6 or 7; read as "HIP 10.0", nothing fitted
    assert resolve(load_manifest(), HipFound("10.0", "ROCm 10.0.0"), os="linux", cuda=13).chosen is None


def test_the_windows_sdk_reads_its_hip_version_h_before_its_folder_name(tmp_path: Path) -> None:
    _write(tmp_path, "Program Files/AMD/ROCm/10.0/include/hip/hip_version.h", HIP_7_17)
    _write(tmp_path, "Program Files/AMD/ROCm/10.0/bin/amdhip64_7.dll")
    found = find_host_hip(tmp_path, WIN, "win32")
    assert found is not None and (found.kind, found.version, found.package) == ("hip-sdk", "7.17", "10.0")
    assert found.source == SDK + r"\include\hip\hip_version.h"
    assert hip_found(WIN, tmp_path, "win32").text == f"HIP 7.17 (HIP SDK 10.0) at {SDK}"
    [sdk] = hipsdk.find_sdks(tmp_path, WIN)  # the SDK checks read it the same way
    assert (sdk.version, sdk.package, sdk.number, sdk.used) == ("7.17", "10.0", "10.0", True)
    assert sdk.label().startswith("HIP 7.17 (HIP SDK 10.0) at ")


def test_without_a_header_the_sdks_runtime_dll_gives_hips_major(tmp_path: Path) -> None:
    _write(tmp_path, "Program Files/AMD/ROCm/10.0/bin/amdhip64_7.dll")
    found = find_host_hip(tmp_path, WIN, "win32")
    assert found is not None and (found.version, found.package) == ("7", "10.0")
    assert found.source == SDK + r"\bin\amdhip64_7.dll (major only)"
    # an SDK whose runtime agrees with its folder keeps the folder's number, as before
    _write(tmp_path, "Program Files/AMD/ROCm/6.4/bin/amdhip64_6.dll")
    env = {**WIN, "HIP_PATH": r"C:\Program Files\AMD\ROCm\6.4"}
    six = find_host_hip(tmp_path, env, "win32")
    assert six is not None and (six.version, six.other_package) == ("6.4", None)
