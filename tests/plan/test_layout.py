"""Release layout recognition: manifest file lists, plus whatever else the archive holds."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.release.layout import layout_from_manifest
from zluda_runner.release.manifest import Asset, ReleaseFile


def _asset(files: list[ReleaseFile]) -> Asset:
    return Asset(
        name="zluda-linux-test.tar.gz", url="https://example.invalid/zluda-linux-test.tar.gz", os="linux",
        arch="x86_64", format="tar.gz", sha256=None, size=None, files=files,
    )


def test_manifest_layout_also_recognises_unlisted_shims(tmp_path: Path) -> None:
    for name in ("libcuda.so.1", "libcublas.so.13", "libcublasLt.so.13"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "libcuda.so").symlink_to("libcuda.so.1")
    asset = _asset([
        ReleaseFile("libcuda.so.1", "driver", None, ["libcuda.so.1", "libcuda.so"]),
        ReleaseFile("libcublas.so.13", "cublas", 13, ["libcublas.so.13"]),
    ])
    layout = layout_from_manifest(tmp_path, asset)
    how = {s.family: s.recognised_by for s in layout.shims}
    assert how == {"driver": "manifest", "cublas": "manifest", "cublasLt": "name"}
    lt = layout.for_family("cublasLt")[0]
    assert lt.cuda_major == 13 and lt.load_names == ("libcublasLt.so.13",)


def test_manifest_layout_falls_back_to_recognition_when_files_differ(tmp_path: Path) -> None:
    (tmp_path / "libcuda.so.1").write_bytes(b"")
    (tmp_path / "libcufft.so.12").write_bytes(b"")
    asset = _asset([ReleaseFile("libcublas.so.13", "cublas", 13, ["libcublas.so.13"])])
    layout = layout_from_manifest(tmp_path, asset)
    assert {(s.family, s.recognised_by) for s in layout.shims} == {("driver", "name"), ("cufft", "name")}


def test_ambiguous_names_are_recognised_by_exports(cc_build, tmp_path: Path) -> None:
    """ZLUDA 3 ships its driver as libnvcuda.so; an unversioned libcublas.so says no CUDA major."""
    import shutil

    from zluda_runner.release.layout import scan_release_dir

    driver = cc_build(["plan/named_by_exports.c"], "libnvcuda.so", args=["-DDRIVER"])
    blas = cc_build(["plan/named_by_exports.c"], "libcublas.so", args=["-DBLAS"])
    other = cc_build(["plan/named_by_exports.c"], "libzluda_helper.so")
    for lib in (driver, blas, other):
        shutil.copy2(lib, tmp_path / lib.name)
    layout = scan_release_dir(tmp_path)
    found = {Path(s.path).name: (s.family, s.recognised_by) for s in layout.shims}
    assert found == {"libnvcuda.so": ("driver", "symbols"), "libcublas.so": ("cublas", "symbols")}
    assert layout.os == "linux"
