"""TargetProfile end to end on fake torch installs built from tests/fixtures/inspection/."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.release.test_cli import commands
from zluda_runner.core.errors import TargetError
from zluda_runner.inspection.inspect import inspect_path, inspect_python
from zluda_runner.inspection.interpreter import interpreter_for_command, parse_torch_version
from zluda_runner.inspection.profile import TargetProfile
from zluda_runner.loader.ldlog import bound_files, parse_ld_debug

from .conftest import write_version_py


def _lib(profile: TargetProfile, name: str):
    lib = profile.library(name)
    assert lib is not None, f"{name} missing from {[x.name for x in profile.libraries]}"
    return lib


def _check_fake_cuda_profile(profile: TargetProfile, fake) -> None:
    assert profile.schema == 1 and profile.os == "linux" and profile.build == "cuda"
    assert (profile.cuda_version, profile.cuda_major) == ("13.0", 13)
    assert profile.torch.version == "2.14.1+cu130" and profile.torch.hip is None
    assert {lib.name: lib.family for lib in profile.libraries} == {
        "libcudart.so.13": "cudart", "libcublas.so.13": "cublas", "libcufft.so.12": "cufft",
        "libcudnn.so.9": "cudnn",
    }
    cublas = _lib(profile, "libcublas.so.13")
    assert cublas.requested_by == ("libtorch_cuda.so",)
    assert cublas.versions_required == ("libcublas.so.13",)
    assert cublas.symbols == ("cublasCreate_v2", "cublasDestroy_v2")
    assert cublas.resolved.via == "rpath" and Path(cublas.resolved.via_object).name == "libtorch_cuda.so"
    assert cublas.resolved.rule == "DT_RPATH of libtorch_cuda.so"
    assert cublas.resolved.path == str(fake.site_packages / "nvidia" / "cu13" / "lib" / "libcublas.so.13")
    cudart = _lib(profile, "libcudart.so.13")
    assert sorted(cudart.requested_by) == ["libc10_cuda.so", "libtorch_cuda.so"]
    assert cudart.symbols == ("cudaFree", "cudaGetDeviceCount", "cudaMalloc")
    cudnn = _lib(profile, "libcudnn.so.9")  # unversioned: symbols attributed through its exports
    assert cudnn.versions_required == () and cudnn.symbols == ("cudnnCreate",)
    assert cudnn.resolved.path == str(fake.site_packages / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    cufft = _lib(profile, "libcufft.so.12")
    assert cufft.resolved.via == "ld_library_path"
    assert cufft.resolved.path == str(fake.extra_dir / "libcufft.so.12")
    reach = {r.requester: r.via for r in cublas.reach}
    assert reach == {"libtorch_cuda.so": "rpath"}
    driver = next(d for d in profile.dlopened if d.name == "libcuda.so.1")
    assert sorted(driver.opened_by) == ["libc10_cuda.so", "libcudart.so.13"]
    assert driver.resolved.path == str(fake.extra_dir / "libcuda.so.1")
    names = {Path(o.path).name for o in profile.objects}
    assert {"_C.cpython-311-x86_64-linux-gnu.so", "libtorch_cuda.so", "libcublas.so.13"} <= names
    torch_cuda = next(o for o in profile.objects if o.path.endswith("libtorch_cuda.so"))
    assert torch_cuda.format == "elf" and torch_cuda.runpath == ()
    assert torch_cuda.rpath[0] == "$ORIGIN/../../nvidia/cu13/lib"


def test_site_packages_profile(fake_torch) -> None:
    profile = inspect_path(fake_torch.site_packages, env=fake_torch.env)
    _check_fake_cuda_profile(profile, fake_torch)
    assert TargetProfile.from_json(profile.to_json()) == profile
    assert inspect_path(fake_torch.torch_dir, env=fake_torch.env).libraries == profile.libraries


def test_profile_matches_the_real_loader(fake_torch, elf_stand_ins) -> None:
    """A decoy libcublas.so.13 on LD_LIBRARY_PATH loses to libtorch_cuda.so's DT_RPATH, for both."""
    shutil.copy2(elf_stand_ins.cublas, fake_torch.extra_dir / "libcublas.so.13")
    env = fake_torch.env
    profile = inspect_path(fake_torch.site_packages, env=env)
    ext = next(fake_torch.torch_dir.glob("_C.*.so"))
    proc = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(ext)!r})"],
                          env={**env, "LD_DEBUG": "libs"}, capture_output=True, text=True, check=True)
    bound = bound_files(parse_ld_debug(proc.stderr))
    for lib in profile.libraries:
        assert os.path.realpath(bound[lib.name]) == os.path.realpath(lib.resolved.path), lib.name
    assert _lib(profile, "libcublas.so.13").resolved.via == "rpath"


def test_inspect_python_finds_torch_without_importing_it(fake_torch, tmp_path: Path) -> None:
    profile = inspect_python(sys.executable, env=fake_torch.env, cache_dir=tmp_path / "cache")
    _check_fake_cuda_profile(profile, fake_torch)
    assert profile.python and profile.python_version == ".".join(map(str, sys.version_info[:3]))
    # torch was found where PYTHONPATH put it, not in the interpreter's own site-packages
    assert profile.torch is not None and Path(profile.torch.path).resolve() == fake_torch.torch_dir.resolve()
    entries = list((tmp_path / "cache" / "inspect").rglob("*.json"))
    assert entries, "per-file results were not cached"
    again = inspect_python(sys.executable, env=fake_torch.env, cache_dir=tmp_path / "cache")
    assert again == profile
    assert sorted((tmp_path / "cache" / "inspect").rglob("*.json")) == sorted(entries)


def test_a_warm_inspection_reads_no_binary(fake_torch, tmp_path: Path, monkeypatch) -> None:
    """One cache file for the ELF facts, one entry per file in it; the second inspection reads none."""
    import json

    from zluda_runner.inspection import readers

    cache = tmp_path / "cache"
    first = inspect_path(fake_torch.site_packages, env=fake_torch.env, cache_dir=cache)
    files = sorted(p.relative_to(cache) for p in cache.rglob("*.json"))
    assert files == [Path("inspect/binfmt/elf.json")]
    entries = json.loads((cache / files[0]).read_text())["files"]
    assert str(fake_torch.torch_dir / "lib" / "libtorch_cuda.so") in entries
    assert all(len(e) == 4 and e[3]["info"]["path"] == p for p, e in entries.items())
    reads: list[str] = []
    monkeypatch.setattr(readers, "read_elf", lambda path, **kw: reads.append(str(path)))
    assert inspect_path(fake_torch.site_packages, env=fake_torch.env, cache_dir=cache) == first
    assert reads == []


def test_changed_file_is_read_again(fake_torch, tmp_path: Path, elf_stand_ins) -> None:
    cache = tmp_path / "cache"
    inspect_path(fake_torch.site_packages, env=fake_torch.env, cache_dir=cache)
    # libc10_cuda.so replaced by a library that needs nothing CUDA at all
    shutil.copy2(elf_stand_ins.cufft, fake_torch.torch_dir / "lib" / "libc10_cuda.so")
    profile = inspect_path(fake_torch.site_packages, env=fake_torch.env, cache_dir=cache)
    assert _lib(profile, "libcudart.so.13").requested_by == ("libtorch_cuda.so",)


@pytest.mark.parametrize(
    ("cuda", "hip", "words"),
    [(None, "6.2.41133", ["ROCm", "needs no ZLUDA"]), (None, None, ["CPU-only"])],
)
def test_non_cuda_builds_are_refused(tmp_path: Path, cuda, hip, words) -> None:
    sp = tmp_path / "sp"
    write_version_py(sp / "torch", version="2.6.0", cuda=cuda, hip=hip)
    (sp / "torch" / "lib").mkdir()
    env = {**os.environ, "PYTHONPATH": str(sp)}
    for call in (lambda: inspect_python(sys.executable, env=env), lambda: inspect_path(sp)):
        with pytest.raises(TargetError) as err:
            call()
        assert all(w in err.value.message for w in words)
        assert err.value.kind == "target" and err.value.hint
    if hip:  # the command that compares it with a CUDA build under ZLUDA
        assert commands(err.value.hint_for("command line") or "") == [
            "zluda-run ab --b-python <rocm python> -- <script>"]


def test_this_interpreter() -> None:
    """A real run with the test interpreter: no torch, or whatever build it has (never imported)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    spec = importlib.util.find_spec("torch")
    if spec is None:
        with pytest.raises(TargetError) as err:
            inspect_python(sys.executable, env=env)
        assert "no torch" in err.value.message and err.value.hint
        return
    version = parse_torch_version(Path(spec.origin).with_name("version.py").read_text())
    if version.get("cuda"):
        profile = inspect_python(sys.executable, env=env)
        assert profile.cuda_version == version["cuda"] and profile.libraries
        return
    with pytest.raises(TargetError) as err:
        inspect_python(sys.executable, env=env)
    assert ("ROCm" if version.get("hip") else "CPU-only") in err.value.message
    assert version["__version__"] in err.value.message and err.value.hint


def test_interpreter_that_does_not_run(tmp_path: Path) -> None:
    failing = tmp_path / "python3"
    failing.write_text("#!/bin/sh\necho 'said-on-stderr-3' >&2\nexit 3\n")
    failing.chmod(0o755)
    not_exec = tmp_path / "python"
    not_exec.write_text("print('hi')\n")
    for bad in (failing, not_exec, tmp_path / "missing" / "python"):
        with pytest.raises(TargetError) as err:
            inspect_python(str(bad))
        assert err.value.kind == "target" and f" {bad} " in err.value.message and err.value.hint
    with pytest.raises(TargetError) as err:
        inspect_python(str(failing))
    assert "(exit 3)" in err.value.message and "said-on-stderr-3" in err.value.message  # code, words


def test_single_binary_with_runpath(tmp_path: Path, elf_stand_ins) -> None:
    app = tmp_path / "app"
    (app / "lib").mkdir(parents=True)
    shutil.copy2(elf_stand_ins.cuda_app, app / "cuda_app")
    shutil.copy2(elf_stand_ins.cudart, app / "lib" / "libcudart.so.13")
    profile = inspect_path(app / "cuda_app", env={"PATH": os.environ.get("PATH", "")})
    assert profile.torch is None and profile.build == "none" and profile.cuda_major == 13
    cudart = _lib(profile, "libcudart.so.13")
    assert cudart.resolved.rule == "DT_RUNPATH of cuda_app"
    assert cudart.symbols == ("cudaGetDeviceCount",)
    assert profile.objects[0].runpath == ("$ORIGIN/lib",)


def test_bad_binaries(tmp_path: Path, cc_build, elf_stand_ins) -> None:
    text = tmp_path / "notes.so"
    text.write_text("hello\n")
    truncated = tmp_path / "libcut.so"
    truncated.write_bytes(elf_stand_ins.torch_cuda.read_bytes()[:300])
    obj32 = cc_build(["inspection/thirty_two.c"], "thirty_two.o", shared=False, args=["-m32", "-c"])
    arm = tmp_path / "libarm.so"
    data = bytearray(elf_stand_ins.cudart.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # e_machine = EM_AARCH64
    arm.write_bytes(bytes(data))
    cases = [(text, "neither an ELF nor a PE"), (truncated, "truncated or corrupt"), (obj32, "32-bit"),
             (arm, "aarch64")]
    for path, words in cases:
        with pytest.raises(TargetError) as err:
            inspect_path(path)
        assert words in err.value.message and err.value.hint
    with pytest.raises(TargetError):
        inspect_path(tmp_path / "nothing-here")
    with pytest.raises(TargetError) as err:
        inspect_path(tmp_path)
    assert err.value.message.startswith(f"{tmp_path} ") and err.value.hint


def test_windows_torch_tree(tmp_path: Path, pe_dlls) -> None:
    torch_dir = tmp_path / "venv" / "Lib" / "site-packages" / "torch"
    write_version_py(torch_dir, version="2.7.0+cu128", cuda="12.8", hip=None)
    lib = torch_dir / "lib"
    lib.mkdir()
    for dll in (pe_dlls.importer, pe_dlls.cublas, pe_dlls.cudart):
        shutil.copy2(dll, lib / dll.name)
    profile = inspect_path(torch_dir.parent)
    assert profile.os == "windows" and profile.cuda_major == 12
    cublas = _lib(profile, "cublas64_12.dll")
    assert cublas.family == "cublas" and cublas.requested_by == ("torch_cuda.dll",)
    assert cublas.resolved.via == "dll-load-dir" and cublas.resolved.rule == "folder of torch_cuda.dll"
    assert cublas.resolved.path == str(lib / "cublas64_12.dll")
    assert "#7" in cublas.symbols and "cublasCreate_v2" in cublas.symbols
    nvrtc = _lib(profile, "nvrtc64_120_0.dll")  # delay-loaded, not shipped here
    assert nvrtc.resolved.via == "not-found" and nvrtc.symbols == ("nvrtcGetErrorString",)
    assert any("nvrtc64_120_0.dll" in w for w in profile.warnings)
    nvcuda = next(d for d in profile.dlopened if d.name == "nvcuda.dll")
    assert nvcuda.opened_by == ("cudart64_12.dll",) and nvcuda.resolved.via == "not-found"
    assert {o.format for o in profile.objects} == {"pe"}


def test_arm64_dll_is_refused(tmp_path: Path, pe_dlls) -> None:
    import pefile

    pe = pefile.PE(str(pe_dlls.cudart))
    pe.FILE_HEADER.Machine = 0xAA64
    arm = tmp_path / "cudart64_12.dll"
    arm.write_bytes(bytes(pe.write()))
    pe.close()
    with pytest.raises(TargetError, match="ARM64"):
        inspect_path(arm)


def test_version_py_is_parsed_not_run() -> None:
    text = "import os\nos.system('false')\n__version__ = '2.5.1+cu124'\ncuda: 'str' = '12.4'\nhip = None\n"
    assert parse_torch_version(text) == {"__version__": "2.5.1+cu124", "cuda": "12.4", "hip": None}
    with pytest.raises(TargetError):
        parse_torch_version("cuda = (")


def test_interpreter_for_command(tmp_path: Path) -> None:
    assert interpreter_for_command([sys.executable, "infer.py"]) == sys.executable
    assert interpreter_for_command(["python3", "-c", "pass"]) == shutil.which("python3")
    script = tmp_path / "train"
    script.write_text(f"#!{sys.executable}\nprint('hi')\n")
    script.chmod(0o755)
    assert interpreter_for_command([str(script), "--epochs", "1"]) == sys.executable
    env_script = tmp_path / "serve"
    env_script.write_text("#!/usr/bin/env -S python3 -u\n")
    env_script.chmod(0o755)
    assert interpreter_for_command([str(env_script)]) == shutil.which("python3")
    shell = tmp_path / "run.sh"
    shell.write_text("#!/bin/sh\necho hi\n")
    shell.chmod(0o755)
    assert interpreter_for_command([str(shell)]) is None
    assert interpreter_for_command(["ls", "-l"]) is None
    assert interpreter_for_command([]) is None
    assert interpreter_for_command(["no-such-command-zr"]) is None
