"""The DLL search order torch/lib DLLs go through (LOAD_LIBRARY_SEARCH_* mode)."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.loader.windows import DllSearchModel


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"MZ")
    return path


def test_search_order(tmp_path: Path, monkeypatch) -> None:
    torch_dir = tmp_path / "Lib" / "site-packages" / "torch"
    requester = _touch(torch_dir / "lib" / "torch_cuda.dll")
    _touch(torch_dir / "lib" / "CUBLAS64_12.DLL")  # Windows names ignore case
    other = tmp_path / "other"
    _touch(other / "cudnn64_9.dll")
    on_path = tmp_path / "on-path"
    _touch(on_path / "cufft64_11.dll")
    monkeypatch.setenv("PATH", str(on_path))
    model = DllSearchModel.for_torch(torch_dir, exec_prefix=tmp_path)
    model.user_dirs.append(other)

    res = model.resolve("cublas64_12.dll", requester)
    assert (res.via, res.via_object) == ("dll-load-dir", "torch_cuda.dll")
    assert res.path == str(torch_dir / "lib" / "CUBLAS64_12.DLL")

    res = model.resolve("cudnn64_9.dll", requester)
    assert res.via == "user-dir" and res.path == str(other / "cudnn64_9.dll")

    res = model.resolve("cufft64_11.dll", requester)
    assert res.via == "not-found" and res.path is None  # PATH is not searched in this mode
    assert str(torch_dir / "lib" / "cufft64_11.dll") in res.tried

    assert model.resolve("KERNEL32.dll", requester).via == "known-dll"
    assert model.resolve("api-ms-win-crt-runtime-l1-1-0.dll", requester).via == "api-set"
    assert model.resolve("version.dll", requester).via == "system32"
    assert model.resolve("nvcuda.dll", requester).via == "not-found"

    model.loaded["nvcuda.dll"] = r"C:\zluda\nvcuda.dll"
    res = model.resolve("NVCUDA.dll", requester)
    assert (res.via, res.path) == ("already-loaded", r"C:\zluda\nvcuda.dll")


def test_real_system32_folder(tmp_path: Path) -> None:
    system32 = tmp_path / "System32"
    _touch(system32 / "nvcuda.dll")
    app = tmp_path / "app"
    requester = _touch(app / "cudart64_12.dll")
    model = DllSearchModel(app_dir=app, system32=system32)
    res = model.resolve("nvcuda.dll", requester)
    assert (res.via, res.path) == ("system32", str(system32 / "nvcuda.dll"))
    assert model.resolve("version.dll", requester).via == "not-found"  # only the real folder counts
