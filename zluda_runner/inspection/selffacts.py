"""What an interpreter says of itself: its executable, version, platform and machine, its site-packages, how
it builds ``sys.path`` at start-up (a ``._pth`` file's lines, its flags), and where its torch is (found,
never imported) -- the one home of that reading.

Read in the target interpreter: this file's own source is the script a child interpreter runs
(``python -c <this file>``: :func:`facts`, printed as one JSON line after :data:`MARK`), so it imports
nothing of zluda-runner and keeps to what Python 3.7 reads. When the target is the interpreter that runs
the ``zluda-run`` command line itself, as it started (:mod:`zluda_runner.core.startstate`), :func:`facts`
runs here instead, with the ``sys.path`` that child would have (:func:`started_here`, :func:`child_path`):
no second interpreter is started (:func:`zluda_runner.inspection.interpreter.probe_interpreter`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Mapping

MARK = "ZLUDA_RUNNER_TARGET="
# What the interpreter reads at start-up that shapes what it says of itself (sys.path, site, the user
# site, sysconfig's paths, the machine on Windows): the same values mean the same answer.
_START_PREFIXES = ("PYTHON", "_PYTHON", "__PYVENV")
_START_NAMES = ("HOME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "PROCESSOR_ARCHITECTURE",
                "PROCESSOR_ARCHITEW6432")
# Start-up options that change sys.path, site or the flags it reports (-I -E -s -S -P), and the options
# that take a value (-X -W, and -c -m, after which the program's own words follow)
_SHAPING_OPTIONS = "IEsSP"
_VALUE_OPTIONS = "XW"


def facts(path: list[str] | None = None) -> dict[str, object]:
    """This interpreter's facts as a JSON-ready dict; ``path``: the ``sys.path`` to report and to find
    torch on (default: ``sys.path`` itself)."""
    path = sys.path if path is None else path
    out: dict[str, object] = {
        "executable": sys.executable, "version": sys.version.split()[0], "platform": sys.platform,
        "exec_prefix": sys.exec_prefix, "machine": None, "site_packages": [], "torch": None, "errors": []}
    errors: list[str] = []
    try:
        out["machine"] = _machine()
    except Exception as exc:
        errors.append(f"platform: {exc!r}")
    try:
        import site
        import sysconfig
        dirs = list(getattr(site, "getsitepackages", lambda: [])())
        if getattr(site, "ENABLE_USER_SITE", False):
            dirs.append(site.getusersitepackages())
        for key in ("purelib", "platlib"):
            p = sysconfig.get_paths().get(key)
            if p and p not in dirs:
                dirs.append(p)
        out["site_packages"] = dirs
    except Exception as exc:
        errors.append(f"site: {exc!r}")
    out["startup"] = _startup(path, errors)
    out["torch"] = _torch(path, errors)
    out["errors"] = errors
    return out


def _machine() -> str:
    """The processor this interpreter runs as: ``uname -m`` (what ``platform.machine()`` says); on Windows
    the process's architecture as the environment says it (``platform.machine()``'s own fallback), never
    ``platform.uname()``, which asks WMI or runs ``cmd /c ver`` there for facts not needed here."""
    if hasattr(os, "uname"):
        return os.uname().machine
    return os.environ.get("PROCESSOR_ARCHITEW6432", "") or os.environ.get("PROCESSOR_ARCHITECTURE", "")


def _startup(path: list[str], errors: list[str]) -> dict[str, object]:
    start: dict[str, object] = {
        "pth_file": None, "pth_lines": None, "ignore_environment": bool(sys.flags.ignore_environment),
        "no_site": bool(sys.flags.no_site), "sys_path": [p for p in path if p], "site_packages": []}
    try:
        for pth in pth_candidates():
            if os.path.isfile(pth):
                with open(pth, encoding="utf-8-sig", errors="replace") as fh:
                    start["pth_file"], start["pth_lines"] = pth, fh.read().splitlines()
                break
        if not sys.flags.no_site:
            import site
            start["site_packages"] = list(getattr(site, "getsitepackages", lambda: [])())
    except Exception as exc:
        errors.append(f"startup: {exc!r}")
    return start


def pth_candidates() -> list[str]:
    """Where a ``._pth`` file would shape this interpreter's start-up, in getpath's order: beside the
    Python DLL, then the executable, then the real (base) executable."""
    cands: list[str | None] = []
    if sys.platform == "win32" and getattr(sys, "dllhandle", None):
        import _winapi
        cands.append(_winapi.GetModuleFileName(sys.dllhandle))  # type: ignore[attr-defined]
    cands += [sys.executable, getattr(sys, "_base_executable", None)]
    found = []
    for p in cands:
        if p:
            if sys.platform == "win32" and p.lower().endswith((".exe", ".dll")):
                p = p.rpartition(".")[0]
            found.append(p + "._pth")
    return found


def _torch(path: list[str], errors: list[str]) -> dict[str, object] | None:
    """Where torch is on ``path`` (its folder and its version.py's text), found, never imported."""
    spec = None
    saved = sys.path[:]
    try:
        import importlib.util
        sys.path[:] = path
        spec = importlib.util.find_spec("torch")
    except Exception as exc:
        errors.append(f"find_spec: {exc!r}")
    finally:
        sys.path[:] = saved
    if spec is None:
        return None
    locs = list(spec.submodule_search_locations or [])
    torch_dir = locs[0] if locs else (os.path.dirname(spec.origin) if spec.origin else None)
    text = None
    if torch_dir:
        vp = os.path.join(torch_dir, "version.py")
        if os.path.isfile(vp):
            with open(vp, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
    return {"path": torch_dir, "version_py": text}


def start_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` an interpreter's start-up reads to say what it says of itself (names
    upper-cased on Windows, where they are case-insensitive)."""
    win = sys.platform == "win32"
    found: dict[str, str] = {}
    for name, value in environ.items():
        key = name.upper() if win else name
        if key.startswith(_START_PREFIXES) or key in _START_NAMES:
            found[key] = value
    return found


def _plain_start(orig_argv: list[str]) -> bool:
    """Was this interpreter started without an option that changes what it says of itself (``-I``,
    ``-E``, ``-s``, ``-S``, ``-P``), as a child started as ``python -c`` is?"""
    words = iter(orig_argv[1:])
    for word in words:
        if word in ("-", "--") or not word.startswith("-"):
            return True
        if word.startswith("--"):
            if word == "--check-hash-based-pycs":
                next(words, None)
            continue
        for i, letter in enumerate(word[1:], 1):
            if letter in _SHAPING_OPTIONS:
                return False
            if letter in "cm":
                return True
            if letter in _VALUE_OPTIONS:
                if i == len(word) - 1:
                    next(words, None)
                break
    return True


def started_here(executable: str, environ: Mapping[str, str],
                 start: tuple[list[str], Mapping[str, str]] | None) -> bool:
    """Would ``executable`` started as a child with ``environ`` be this interpreter as it started
    (``start``: its ``sys.path`` and environment then; None: unknown)? The same file by the same name (a
    venv's python is not the interpreter it links to), started without an option that shapes its
    start-up, and ``environ`` holds the start-up variables it started with."""
    if start is None or getattr(sys, "frozen", False) or not sys.executable:
        return False
    same = [os.path.normcase(os.path.abspath(p)) for p in (executable, sys.executable)]
    return (same[0] == same[1]
            and _plain_start(list(getattr(sys, "orig_argv", [sys.executable])))
            and start_variables(environ) == start_variables(start[1]))


def child_path(start_path: list[str]) -> list[str]:
    """The ``sys.path`` a child ``python -c`` would start with, from this interpreter's at its start: the
    first entry (the folder of the script, or ``-m``'s working folder, put there at start-up unless
    ``-P``/``PYTHONSAFEPATH`` or a ``._pth`` file says not) the empty string ``-c`` puts there (the
    working folder)."""
    path = list(start_path)
    if not getattr(sys.flags, "safe_path", False) and path:
        path[0] = ""
    return path


if __name__ == "__main__":  # the child's side: python -c <this file>
    import json
    sys.stdout.write(MARK + json.dumps(facts()) + "\n")
