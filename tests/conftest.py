"""Shared test fixtures: native builds from committed C sources, real NVIDIA clients."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from zluda_runner.core.arch import is_supported, machine
from zluda_runner.core.native import compile_c

FIXTURES = Path(__file__).resolve().parent / "fixtures"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


RELEASES_BASE = "https://github.com/vosen/ZLUDA/releases/download"


def one_asset_manifest(folder: Path, payload: bytes, name: str, os_name: str, *,
                       mirror: Path | None = None) -> Path:
    """``folder/manifest.json``: the packaged manifest with only upstream v6, whose one asset is
    ``payload`` for ``os_name`` named ``name`` (its real SHA-256 and size; the rest of the asset is the
    packaged one's). ``mirror``: the payload is also put where a file:// mirror there serves it."""
    import copy
    import hashlib
    import json

    from zluda_runner.release.manifest import default_manifest_path

    packaged = json.loads(default_manifest_path().read_text())
    release = copy.deepcopy(next(r for r in packaged["releases"] if r["id"] == "upstream-v6"))
    asset = copy.deepcopy(next(a for a in release["assets"] if a["os"] == os_name))
    asset.update(name=name, url=f"{RELEASES_BASE}/v6/{name}", sha256=hashlib.sha256(payload).hexdigest(),
                 size=len(payload))
    release["assets"] = [asset]
    if mirror is not None:
        served = mirror / "vosen/ZLUDA/releases/download/v6" / name
        served.parent.mkdir(parents=True, exist_ok=True)
        served.write_bytes(payload)
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({**packaged, "releases": [release]}))
    return manifest


def still_running(pid: int) -> bool:
    """Still running once a SIGKILL sent to it has had a bound to take effect (gone, or a zombie: dead)."""
    deadline = time.monotonic() + 60.0  # a bound, not a timing: SIGKILL takes effect at once
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.02)


def put_elf(dest: Path) -> Path:
    """A real x86-64 shared library (tests/fixtures/elf/plain.c, built once into the tests' private cache)
    at ``dest``: what a fake host tree holds where the loader model must take a library (it reads ELF
    headers, as ld.so does)."""
    require(is_supported(), X86_ONLY)
    cache = Path(os.environ["ZLUDA_RUNNER_CACHE"]) / "elf"
    built = compile_c([FIXTURES / "elf" / "plain.c"], "libplain.so", cache)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(built.read_bytes())
    return dest


def require(condition: bool, reason: str) -> None:
    """Skip when a prerequisite is missing on a developer machine; fail in CI,
    where `.ci/run` installs every prerequisite, so a skip would hide a gap."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"prerequisite missing in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Commands run by tests without --cache-dir (doctor, ab ...) record into a private cache, never
    the user's ~/.cache."""
    if not os.environ.get("ZLUDA_RUNNER_CACHE"):
        os.environ["ZLUDA_RUNNER_CACHE"] = str(tmp_path_factory.mktemp("zluda-runner-cache"))


@pytest.fixture(autouse=True, scope="session")
def _bare_host(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read the host: the HIP/ROCm install, GPUs, /dev/kfd and the driver are read under
    an empty fake root (``ZLUDA_RUNNER_ROOT``) unless a test gives its own tree, so the suite runs the
    same on a bare machine and on one with Debian's libamdhip64-5, a /opt/rocm or a HIP SDK. Commands
    the tests start inherit it."""
    if not os.environ.get("ZLUDA_RUNNER_ROOT"):
        os.environ["ZLUDA_RUNNER_ROOT"] = str(tmp_path_factory.mktemp("bare-host-root"))
    for name in [n for n in os.environ if n == "HIP_PATH" or n.startswith("HIP_PATH_") or n == "ROCM_PATH"]:
        del os.environ[name]  # a developer's HIP SDK / ROCm variables are host facts too
    # so is the terminal: a shell's exported COLUMNS, or the COLUMNS=80 LINES=24 pytest-xdist's workers
    # are started with; the views' tests that need a width set COLUMNS themselves
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode for zluda-runner, compiled once before the tests start: the suite starts ``zluda-run``
    and ``python -m zluda_runner`` hundreds of times, and where PYTHONDONTWRITEBYTECODE is set (CI's
    machine sets it) an editable install is otherwise compiled from source by every one of them.
    Existing bytecode is read either way; compileall skips what is up to date.

    And Ctrl-C as a terminal gives it: a suite started in the background by a script (``cmd &`` in a shell
    without job control) inherits SIGINT ignored, every process it starts too, and the tests that press
    Ctrl-C on ``zluda-run``, ``find`` or a workload then see nothing arrive. Python's own handler here
    makes the processes the tests start take SIGINT as default again (an ignored signal survives exec, a
    handled one does not)."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput"):  # pytest-xdist's workers: the controller compiled it
        return
    import compileall

    import zluda_runner

    compileall.compile_dir(Path(zluda_runner.__file__).parent, quiet=2)


WINE_TESTS = "tests/windows/"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Wine tests first (``pytest_xdist_make_scheduler`` hands them out first; they are the long
    ones), the rest of the suite after, each part in its own order."""
    items[:] = ([item for item in items if item.nodeid.startswith(WINE_TESTS)]
                + [item for item in items if not item.nodeid.startswith(WINE_TESTS)])


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown where xdist is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``-n auto --dist loadgroup`` (pyproject's addopts): each Wine test module is one unit of work, on
    one worker (its module fixtures, an interpreter of its own, are made once), every other test a unit
    of its own; the Wine modules are handed out first, the largest first, over every worker, each of
    which keeps one Wine prefix, one ``wineserver`` and one compiled template interpreter for its session
    (tests/windows/conftest.py); the rest of the suite fills the workers after them. Done here rather
    than by ``xdist_group`` marks, which pytest-xdist 3.8 ignores under pytest 9.2 (it renames
    ``item._nodeid``, which pytest 9.2 no longer reads)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WineModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::", 1)[0] if nodeid.startswith(WINE_TESTS) else nodeid

    return WineModules(config, log)  # type: ignore[arg-type]


BuildFn = Callable[..., Path]


X86_ONLY = (f"ZLUDA, its shims and our trampolines are x86-64 only; this machine is {machine()}: "
            "native fixtures are not built here")


@pytest.fixture(scope="session")
def native_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where native fixtures are built: every test that needs one needs x86-64, and says so."""
    if not is_supported():
        pytest.skip(X86_ONLY)
    return tmp_path_factory.mktemp("native")


def _builder(out_dir: Path, *, cc: str | None = None, shared_flag: bool = False) -> BuildFn:
    """A build function for sources under tests/fixtures/ (or absolute paths), cached per session.

    ``shared_flag``: pass ``-shared`` ourselves (mingw: ``compile_c``'s ``-fPIC`` is not for PE).
    """

    def build(
        sources: Sequence[str | Path],
        output_name: str,
        *,
        args: Sequence[str] = (),
        shared: bool = True,
        deps: Sequence[str | Path] = (),
    ) -> Path:
        srcs = [s if Path(s).is_absolute() else FIXTURES / s for s in sources]
        dep_paths = [d if Path(d).is_absolute() else FIXTURES / d for d in deps]
        if shared_flag:
            extra = ["-shared"] if shared else []
            return compile_c(srcs, output_name, out_dir, args=[*extra, *args], shared=False,
                             deps=dep_paths, cc=cc)
        return compile_c(srcs, output_name, out_dir, args=args, shared=shared, deps=dep_paths, cc=cc)

    return build


@pytest.fixture(scope="session")
def cc_build(native_dir: Path) -> BuildFn:
    """Build C sources with the system cc: ``cc_build(["elf/lib.c"], "libfoo.so.1",
    args=["-Wl,-soname,libfoo.so.1"])``; ``shared=False`` for an executable."""
    return _builder(native_dir)


def standin_cublas(build: BuildFn, variant: str, name: str = "libcublas.so.12") -> Path:
    """The stand-in cuBLAS (tests/fixtures/probe/standin_cublas.c): ``""`` computes, ``"UPSTREAM"`` answers
    nrm2 / gemv CUBLAS_STATUS_NOT_SUPPORTED as upstream ZLUDA's does, ``"WRONG"`` computes wrong values."""
    flags = [f"-DSTANDIN_CUBLAS_{variant}"] if variant else []
    return build(["probe/standin_cublas.c"], name, args=[*flags, *([] if name.endswith(".dll") else ["-lm"])])


def beside(folder: Path, *files: tuple[Path, str]) -> Path:
    """``files`` (built file, name) copied into ``folder`` (a driver and the cuBLAS the probe finds beside
    it); the first one's copy."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    for built, name in files:
        shutil.copy2(built, folder / name)
    return folder / files[0][1]


@pytest.fixture(scope="session")
def standin(cc_build, native_dir: Path) -> Path:
    """The stand-in libcuda with the planted gaps (tests/fixtures/probe/standin_cuda.c), beside a stand-in
    cuBLAS whose nrm2 and gemv are NOT_SUPPORTED, as upstream ZLUDA's."""
    driver = cc_build(["probe/standin_cuda.c"], "libcuda.so.1", args=["-Wl,-soname,libcuda.so.1"])
    return beside(native_dir / "standin", (driver, "libcuda.so.1"),
                  (standin_cublas(cc_build, "UPSTREAM"), "libcublas.so.12"))


@pytest.fixture(scope="session")
def standin_ok(cc_build, native_dir: Path) -> Path:
    """The same stand-in built without gaps (the 'real driver' under the tracer), its cuBLAS computing."""
    driver = cc_build(
        ["probe/standin_cuda.c"], "libcuda.so.1", args=["-DSTANDIN_NO_GAPS", "-Wl,-soname,libcuda.so.1"]
    )
    return beside(native_dir / "standin_ok", (driver, "libcuda.so.1"),
                  (standin_cublas(cc_build, ""), "libcublas.so.12"))


def _find_cudart() -> Path | None:
    try:
        import nvidia  # type: ignore[import-not-found]

        for base in nvidia.__path__:
            for cand in sorted(Path(base).glob("cu*/lib/libcudart.so.*")):
                if cand.name.count(".") == 2:  # libcudart.so.13
                    return cand
    except ImportError:
        pass
    local = Path("/usr/local/cuda/lib64/libcudart.so.13")
    return local if local.exists() else None


@pytest.fixture(scope="session")
def cudart_path() -> Path:
    """The real NVIDIA libcudart (pip package nvidia-cuda-runtime)."""
    found = _find_cudart()
    require(found is not None, "NVIDIA libcudart not found (pip install nvidia-cuda-runtime)")
    assert found is not None
    return found


MINGW_CC = "x86_64-w64-mingw32-gcc"


@pytest.fixture(scope="session")
def mingw_build(native_dir: Path) -> BuildFn:
    """Build a Windows PE (DLL by default, ``shared=False`` for an EXE) with mingw-w64.

    ``mingw_build(["pe/foo.c"], "cublas64_12.dll", args=["-Wl,--out-implib,..."])``
    """
    import shutil

    cc = shutil.which(MINGW_CC)
    require(cc is not None, f"{MINGW_CC} not installed (apt-get install gcc-mingw-w64-x86-64-win32)")
    assert cc is not None
    return _builder(native_dir / "pe", cc=cc, shared_flag=True)
