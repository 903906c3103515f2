"""The ``.pth`` start-up hook of a portable Windows Python: one inert file, journaled, removable.

A portable interpreter (``python3XX._pth``: ComfyUI's and SD.Next's bundles) ignores ``PYTHONPATH``,
so a ``sitecustomize`` of ours is never seen. With an active ``import site`` line it does process the
``.pth`` files of the site-packages folder its ``._pth`` lists, and runs their ``import`` lines. The
hook is such a file, ``zluda_runner_startup.pth``: a comment saying what it is, and one line that
does nothing unless ``ZLUDA_RUNNER_STARTUP`` names a file; zluda-run sets that variable for its
launches only, to the start-up code kept in its cache (:mod:`zluda_runner.launch.windows.preload`).
Started without zluda-run, the interpreter is as before.

It is the one file zluda-run writes beside the target's packages (the project writes only to its
cache, the user's chosen paths and, on request, the target's torch/lib): the only place, short of
editing the interpreter's own ``._pth`` file, from which such an interpreter reads start-up code.
So it is journaled in the cache (``win-hooks/hooks.json``: the file, its hash, when), a file of that
name that is not ours is never overwritten, and ``zluda-run restore`` removes it (only when its
content is still ours).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import LaunchError
from zluda_runner.core.fsutil import atomic_write_json, atomic_write_text, write_if_changed
from zluda_runner.core.serial import JsonMixin
from zluda_runner.launch.startup import PLACED_DEFAULTS_ENV, TORCH_DEFAULTS
from zluda_runner.launch.windows.preload import STARTUP_ENV
from zluda_runner.plan.defaults import TORCH_DEFAULTS_ENV, defaults_env
from zluda_runner.plan.model import AppliedDefault, ShimPlan
from zluda_runner.plan.windows import PTH_HOOK_NAME

HOOK_MARK = "# zluda-runner start-up hook"
HOOK_LINE = (
    f'import os; p = os.environ.get("{STARTUP_ENV}"); p and os.path.isfile(p) and exec(compile(open(p, "rb")'
    '.read(), p, "exec"), {"__name__": "__zluda_runner_startup__", "__file__": p})'
)
PTH_TEXT = (f"{HOOK_MARK}: written by zluda-run, inert unless {STARTUP_ENV} is set (zluda-run sets it "
            "for its own launches); `zluda-run restore` removes it\n" + HOOK_LINE + "\n")
JOURNAL = Path("win-hooks") / "hooks.json"
JOURNAL_SCHEMA = 1


@dataclass
class HookRecord(JsonMixin):
    path: str
    sha256: str
    installed: str


@dataclass
class HookJournal(JsonMixin):
    schema: int = JOURNAL_SCHEMA
    hooks: list[HookRecord] = field(default_factory=list)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _journal_path(cache_dir: Path) -> Path:
    return Path(cache_dir) / JOURNAL


def read_hooks(cache_dir: Path) -> HookJournal:
    """The journal of hooks written (an unreadable journal is an error, never silently empty)."""
    path = _journal_path(cache_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return HookJournal()
    except (OSError, ValueError) as exc:
        raise LaunchError(f"the start-up hook journal {path} cannot be read: {exc}",
                          hint="remove it; then look for zluda_runner_startup.pth files by hand") from exc
    try:
        journal = HookJournal.from_dict(data)
        if journal.schema != JOURNAL_SCHEMA or not all(isinstance(h.path, str) for h in journal.hooks):
            raise TypeError("unexpected content")
    except (TypeError, ValueError, KeyError) as exc:
        raise LaunchError(f"the start-up hook journal {path} is damaged ({exc})",
                          hint="remove it; then look for zluda_runner_startup.pth files by hand") from exc
    return journal


def _write_journal(cache_dir: Path, journal: HookJournal) -> None:
    atomic_write_json(_journal_path(cache_dir), journal.to_dict())


def hook_path(folder: str | Path) -> Path:
    return Path(folder) / PTH_HOOK_NAME


def is_ours(path: Path) -> bool:
    """The start-up hook, or the placed-defaults hook, as zluda-run wrote them (by their first line)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").startswith((HOOK_MARK, DEFAULTS_MARK))
    except OSError:
        return False


def install_pth_hook(folder: str | Path, cache_dir: Path) -> Path:
    """Write (once) the hook into ``folder`` (a site-packages the interpreter's ``._pth`` lists), journal
    first; its path. A file of that name that is not ours is refused, never overwritten."""
    path = hook_path(folder)
    if not Path(folder).is_dir():
        raise LaunchError(f"cannot write zluda-run's start-up hook: {folder} is not a folder",
                          hint="the interpreter's ._pth lists it as site-packages: create it, or rerun "
                          "{cmd:plan} after changing the interpreter")
    try:
        current = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
    except OSError as exc:
        raise LaunchError(f"cannot read {path}: {exc.strerror}", hint="check its permissions") from exc
    if current is not None and not current.startswith(HOOK_MARK):
        raise LaunchError(f"{path} exists and is not zluda-run's start-up hook: left alone",
                          hint="rename or remove it, then rerun")
    journal = read_hooks(cache_dir)
    if not any(os.path.normcase(h.path) == os.path.normcase(str(path)) for h in journal.hooks):
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        journal.hooks.append(HookRecord(str(path), _sha(PTH_TEXT), now))
        _write_journal(cache_dir, journal)  # intent first: a killed write is still found by restore
    if current != PTH_TEXT:
        try:
            atomic_write_text(path, PTH_TEXT)
        except OSError as exc:
            raise LaunchError(
                f"cannot write zluda-run's start-up hook {path}: {exc.strerror}",
                hint="this portable Python reads start-up code only from there: run once from a shell "
                "allowed to write that folder, or use a release with zluda.exe ({opt:injector})") from exc
    return path


def remove_pth_hook(path: Path, cache_dir: Path | None = None) -> bool:
    """Remove the hook at ``path`` if its content is ours (True when a file was removed); the journal
    forgets it."""
    removed = False
    if path.exists() and is_ours(path):
        path.unlink()
        removed = True
    if cache_dir is not None and _journal_path(cache_dir).exists():
        journal = read_hooks(cache_dir)
        kept = [h for h in journal.hooks if os.path.normcase(h.path) != os.path.normcase(str(path))]
        if len(kept) != len(journal.hooks):
            journal.hooks = kept
            _write_journal(cache_dir, journal)
    return removed


def hooks_present(cache_dir: Path) -> list[Path]:
    """The journaled hooks that are still there (and ours)."""
    return [Path(h.path) for h in read_hooks(cache_dir).hooks if is_ours(Path(h.path))]


# --------------------------------------------------------------------------- placed defaults
# `zluda-run place` leaves a torch/lib that any later `python` uses with ZLUDA, started by the user, not
# by zluda-run: the plan's defaults reach those runs through a second .pth file in the same site-packages,
# written at place time with the defaults it recorded (self-contained: the start-up text is embedded, the
# cache may be cleaned), journaled like the start-up hook, removed by `zluda-run restore`. It acts only
# outside zluda-run's own launches (ZLUDA_RUNNER_RELEASE unset: a launch applies its own defaults); the
# user's own environment values win (setdefault).

DEFAULTS_HOOK_NAME = "zluda_runner_defaults.pth"
DEFAULTS_MARK = "# zluda-runner placed defaults"
_LAUNCH_MARK_ENV = "ZLUDA_RUNNER_RELEASE"  # set by every zluda-run launch (launch.prepare.RELEASE_ENV)


def defaults_hook_path(folder: str | Path) -> Path:
    return Path(folder) / DEFAULTS_HOOK_NAME


def defaults_pth_text(defaults: Sequence[AppliedDefault]) -> str | None:
    """The placed-defaults hook for ``defaults`` (those applied); None when none applies."""
    env = defaults_env(defaults)
    names = env.pop(TORCH_DEFAULTS_ENV, "")
    if not env and not names:
        return None
    code = "import os\n" + "".join(f"os.environ.setdefault({k!r}, {v!r})\n" for k, v in sorted(env.items()))
    if names:
        code += f"os.environ[{PLACED_DEFAULTS_ENV!r}] = {names!r}\n" + TORCH_DEFAULTS
    line = (f'import os; "{_LAUNCH_MARK_ENV}" in os.environ or exec(compile({code!r}, '
            f'{DEFAULTS_HOOK_NAME!r}, "exec"), {{"__name__": "__zluda_runner_defaults__"}})')
    shown = ", ".join(d.setting for d in defaults if d.applied and d.vehicle != "info")
    return (f"{DEFAULTS_MARK}: written by `zluda-run place` (ZLUDA is placed in torch/lib); applies {shown} "
            "when torch is used outside zluda-run; `zluda-run restore` removes it\n" + line + "\n")


def _is_defaults_hook(path: Path) -> bool:
    try:
        return path.read_text(encoding="utf-8", errors="replace").startswith(DEFAULTS_MARK)
    except OSError:
        return False


def install_defaults_hook(folder: str | Path, defaults: Sequence[AppliedDefault],
                          cache_dir: Path) -> Path | None:
    """Write (or, with nothing to apply, remove) the placed-defaults hook in ``folder`` (torch's
    site-packages), journal first; its path, or None. A file of that name that is not ours is refused."""
    path = defaults_hook_path(folder)
    text = defaults_pth_text(defaults)
    if path.exists() and not _is_defaults_hook(path):
        raise LaunchError(f"{path} exists and is not zluda-run's placed-defaults hook: left alone",
                          hint="rename or remove it, then place again")
    if text is None:
        remove_pth_hook(path, cache_dir)
        return None
    journal = read_hooks(cache_dir)
    if not any(os.path.normcase(h.path) == os.path.normcase(str(path)) for h in journal.hooks):
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        journal.hooks.append(HookRecord(str(path), _sha(text), now))
        _write_journal(cache_dir, journal)  # intent first: a killed write is still found by restore
    try:
        write_if_changed(path, text)
    except OSError as exc:
        raise LaunchError(f"cannot write zluda-run's placed-defaults hook {path}: {exc.strerror}",
                          hint="run {cmd:place} from a shell allowed to write that folder, or "
                          "{opt:no_defaults} to place without it") from exc
    return path


def our_hooks(folder: str | Path) -> list[Path]:
    """zluda-run's hooks in ``folder`` (a site-packages): the start-up hook and the placed-defaults hook,
    those that are there and ours."""
    return [p for p in (hook_path(folder), defaults_hook_path(folder)) if p.exists() and is_ours(p)]


def hook_note(path: Path) -> str:
    """What ``status`` says of one of our hooks."""
    if _is_defaults_hook(path):
        return (f"zluda-run's placed-defaults hook {path} is in place (applies the plan's defaults when "
                "torch is used outside zluda-run; `zluda-run restore` removes it)")
    return (f"zluda-run's start-up hook {path} is in place (inert unless zluda-run starts the workload; "
            "`zluda-run restore` removes it)")


def defaults_folder(plan: ShimPlan, torch_lib: str | Path) -> list[Path]:
    """The folder :func:`place_defaults` writes the hook into (torch's site-packages), when it writes one."""
    return [Path(torch_lib).parent.parent] if defaults_pth_text(plan.defaults) is not None else []


def place_defaults(plan: ShimPlan, torch_lib: str | Path, cache_dir: Path) -> Path | None:
    """After ``zluda-run place``: the placed-defaults hook for ``plan`` in torch's site-packages
    (``torch_lib``'s grandparent), or its removal when the plan applies none (``--no-defaults``)."""
    return install_defaults_hook(Path(torch_lib).parent.parent, plan.defaults, cache_dir)
