"""From what the user typed to a ready launch: target, release, plan, loader set-up.

``prepare_plan`` runs the pipeline (inspect -> release -> plan) and caches the
plan keyed by the identities (path, size, mtime) of every file it was computed
from, so a repeated ``zluda-run python infer.py`` skips inspection entirely.
``linux_launch`` turns a plan into a :class:`~zluda_runner.launch.linux.LinuxLaunch`
(link folder, redirector, environment); ``windows_placements`` into placements.

Imports of the heavy stages happen inside functions: a cached launch must stay
fast (see benchmarks/launch_overhead.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zluda_runner.core.errors import FatalPlanError, LaunchError
from zluda_runner.core.fsutil import atomic_write_json
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.settings import Settings
from zluda_runner.core.version import __version__

if TYPE_CHECKING:  # the stages themselves are imported lazily: a cached launch stays fast
    from zluda_runner.inspection.profile import TargetProfile
    from zluda_runner.launch.linux import LinuxLaunch
    from zluda_runner.release.layout import ReleaseLayout
    from zluda_runner.release.model import Manifest
    from zluda_runner.release.selection import HipFound
from zluda_runner.plan.model import ReleaseRef, ShimPlan

RELEASE_ENV = "ZLUDA_RUNNER_RELEASE"
# Bumped when what a plan holds, or how it is computed, changes within one released version.
PLAN_CACHE_FORMAT = 6
_ENV_KEYS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "PATH", "ROCM_PATH", "HIP_PATH")


@dataclass
class TargetChoice:
    """How the target is found: an interpreter, or a binary."""

    python: str | None
    binary: str | None


def choose_target(argv: Sequence[str], settings: Settings) -> TargetChoice:
    """``--python`` wins; else the interpreter the command runs; else the command's binary."""
    if settings.python:
        return TargetChoice(settings.python, None)
    if argv:
        from zluda_runner.inspection.interpreter import interpreter_for_command

        python = interpreter_for_command(argv)
        if python:
            return TargetChoice(python, None)
        exe = _command_path(argv[0])
        if exe and Path(exe).is_file() and _is_program(Path(exe)):
            return TargetChoice(None, str(Path(exe).resolve()))
        return TargetChoice(None, None)  # a shell or batch script, a launcher: not inspectable
    return TargetChoice(sys.executable, None)


def _command_path(word: str) -> str | None:
    """The file a command's first word runs: a path as given (``/`` or, on Windows, ``\\``), else
    found on PATH (with PATHEXT on Windows: ``app`` runs ``app.exe``)."""
    if os.sep in word or (os.altsep is not None and os.altsep in word):
        return word
    return shutil.which(word)


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _is_program(path: Path) -> bool:
    """An ELF or PE (``.exe``) file: one inspection can read."""
    if _is_elf(path):
        return True
    from zluda_runner.binfmt.pe import is_pe

    return is_pe(path)


def inspect_target(choice: TargetChoice, settings: Settings, env: Mapping[str, str]) -> TargetProfile | None:
    from zluda_runner.inspection.inspect import inspect_path, inspect_python

    cache = settings.cache_dir
    if choice.python is None and choice.binary is None:
        return None
    if choice.binary:
        return inspect_path(Path(choice.binary), cache_dir=cache, env=env)
    assert choice.python is not None
    return inspect_python(choice.python, cache_dir=cache, env=env)


ASSUMED_PREFIX = "could not inspect the target"


def _host_os() -> str:
    from zluda_runner.release.selection import host_os

    return host_os() or "linux"


def assumed_target(argv: Sequence[str], layout: ReleaseLayout) -> TargetProfile:
    """A target that could not be inspected (a script, a launcher that is neither an ELF/PE program
    nor Python): assume it may run any CUDA program or torch, so every library of the release is set up
    under every name it serves, through the redirector (torch-style path preloads are covered)."""
    from zluda_runner.inspection.profile import LibraryNeed, TargetProfile

    libraries: dict[str, LibraryNeed] = {}
    for shim in layout.shims:
        for name in shim.load_names:
            libraries.setdefault(name, LibraryNeed(name=name, family=shim.family, major=shim.cuda_major,
                                                   requested_by=("(assumed)",)))
    command = argv[0] if argv else "the command"
    if layout.os == "windows":
        what = "a PE program (.exe) nor a Python interpreter (a .bat or .cmd script? a launcher?)"
        how = ("started through the release's injector (zluda.exe), which loads ZLUDA's DLLs into the "
               "program before it runs")
    else:
        what = "an ELF program nor a Python interpreter (a shell script? a launcher?)"
        how = "redirected through LD_AUDIT, and child processes inherit the set-up"
    note = (
        f"{ASSUMED_PREFIX}: {command} is neither {what}; assumed it runs CUDA programs or torch: every "
        f"library of the release is set up under every name it serves, {how}"
    )
    return TargetProfile(os=layout.os, build="unknown", roots=(command,), libraries=tuple(libraries.values()),
                         warnings=(note,))


# --------------------------------------------------------------------------- release


@dataclass
class ReleaseSource:
    layout: ReleaseLayout
    ref: ReleaseRef
    not_downloaded: str | None = None  # the note a plan from the manifest alone carries


def host_hip_version(env: Mapping[str, str] | None = None) -> str | None:
    """The host's HIP/ROCm version as "X.Y" (ROCm folder, HIP SDK or distribution package), or None."""
    return host_hip_found(env).version


def host_hip_found(env: Mapping[str, str] | None = None) -> HipFound:
    """The host's HIP in words (read under ``ZLUDA_RUNNER_ROOT`` when that names a fake tree)."""
    from zluda_runner.host.quick import hip_found

    return hip_found(env)


def host_gfx(settings: Settings, env: Mapping[str, str] | None = None) -> str | None:
    """The gfx of the GPU the workload gets: the user's ``HIP_VISIBLE_DEVICES`` where set, else the
    dedicated one where the plan's ``dedicated-gpu`` default chooses it, else HIP's device 0
    (:func:`zluda_runner.plan.defaults_facts.workload_gpu_env`; the KFD topology, read under
    ``ZLUDA_RUNNER_ROOT`` when that names a fake tree): what the manifest's GPU x HIP rules judge."""
    from zluda_runner.host.quick import target_gfx
    from zluda_runner.plan.defaults_facts import workload_gpu_env

    return target_gfx(workload_gpu_env(settings, os.environ if env is None else env))


def target_cuda(python: str | None) -> tuple[str | None, str | None]:
    """The CUDA of ``python``'s torch (default: this interpreter), read as ``plan`` reads it, or None
    and a note that says why not (``releases`` then selects for any CUDA)."""
    from zluda_runner.core.errors import TargetError
    from zluda_runner.inspection.interpreter import check_cuda_build, probe_interpreter, torch_info

    try:
        facts = probe_interpreter(python or sys.executable)
        if facts.torch_path is None:
            return None, (f"no torch in {facts.executable}: CUDA not checked "
                          "({opt:python PY} or {opt:cuda N})")
        info = torch_info(Path(facts.torch_path), facts.torch_version_py)
        check_cuda_build(info, facts.executable)
    except TargetError as exc:
        return None, f"{exc.message}: CUDA not checked ({{opt:python PY}} or {{opt:cuda N}})"
    return info.cuda, None


def archive_release(manifest: Manifest, settings: Settings, os_name: str) -> str | None:
    """``--archive FILE`` is looked at before any release is chosen: a file that is not there is an
    error; a file named as one manifest asset for this OS picks that release."""
    archive = settings.archive
    if archive is None:
        return None
    from zluda_runner.core.errors import FetchError

    path = archive.expanduser()
    if not path.is_file():
        raise FetchError(f"the archive {path} given with {{opt:archive}} is not a file",
                         hint="give the path of the release archive you downloaded by hand")
    named = {r.id for r in manifest.releases for a in r.assets if a.name == path.name and a.os == os_name}
    return named.pop() if len(named) == 1 else None


def host_release_check(settings: Settings, found: HipFound | None = None, gfx: str | None = None) -> None:
    """Before the target is inspected: a host whose HIP no release for this OS takes, or whose GPU with
    that HIP breaks one of the manifest's GPU x HIP rules (``gfx``, default: the GPU the run uses), is
    refused here, with what was found and how to get a HIP that fits (:class:`NothingFitsError`, exit 3)."""
    if settings.zluda_dir is not None:
        return
    from zluda_runner.release.manifest import load_current_manifest
    from zluda_runner.release.selection import choose, host_os

    os_name = host_os()
    if os_name is None:
        return
    manifest = load_current_manifest(settings.manifest, settings.cache_dir)
    wanted = settings.release or archive_release(manifest, settings, os_name)
    choose(manifest, found if found is not None else host_hip_found(), os=os_name, release=wanted,
           gfx=gfx if gfx is not None else host_gfx(settings))


def release_for(
    settings: Settings,
    *,
    os_name: str,
    cuda_major: int | None,
    cuda_version: str | None = None,
    trust_on_first_use: bool = False,
    download: bool = True,
    env: Mapping[str, str] | None = None,
) -> ReleaseSource:
    """The release folder: ``--zluda-dir`` as is, else the manifest's pick for this host and CUDA
    major (HIP version and its origin, and the GPU the run uses, read from the host in ``env``: the GPU x
    HIP rules apply), fetched into the cache. ``download=False`` (``plan``): a release not in the cache is
    described by the manifest alone, and nothing is downloaded."""
    from zluda_runner.plan.model import ReleaseRef
    from zluda_runner.release.layout import layout_from_manifest, scan_release_dir

    if settings.zluda_dir is not None:
        layout = scan_release_dir(settings.zluda_dir)
        return ReleaseSource(layout, ReleaseRef(None, None, None, None, layout.root))
    from zluda_runner.release.cache import cached_release_dir, ensure_release
    from zluda_runner.release.manifest import load_current_manifest, resolve_release_root
    from zluda_runner.release.selection import choose, host_os

    manifest = load_current_manifest(settings.manifest, settings.cache_dir)
    here = os_name == host_os()
    found = host_hip_found(env) if here else None
    wanted = settings.release or archive_release(manifest, settings, os_name)
    choice = choose(manifest, found, os=os_name, cuda=cuda_major, release=wanted,
                    gfx=host_gfx(settings, env) if here else None)
    release, asset = choice.release, choice.asset
    if not download and cached_release_dir(settings.cache_dir, release, asset) is None:
        from zluda_runner.release.provisional import download_note, provisional_layout

        root = CachePaths(settings.cache_dir).releases / release.id / "(not downloaded)"
        ref = ReleaseRef(release.id, release.version, release.flavour, asset.name, str(root))
        return ReleaseSource(provisional_layout(root, asset), ref, download_note(release.id, asset))
    unpacked = ensure_release(release, asset, settings.cache_dir, archive=settings.archive,
                              trust_on_first_use=trust_on_first_use or settings.trust_on_first_use)
    root = resolve_release_root(unpacked, asset)
    layout = layout_from_manifest(root, asset)
    ref = ReleaseRef(release.id, release.version, release.flavour, asset.name, str(root))
    return ReleaseSource(layout, ref)


# --------------------------------------------------------------------------- plan cache


def _stat_id(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _command_identity(argv: Sequence[str], settings: Settings) -> dict[str, Any]:
    """What decides the target (see :func:`choose_target`), without importing the inspector.

    The choice is a function of ``--python``, else of the file the command's first word
    runs (its ``#!`` line names the interpreter; PATH is part of the key too), so a cached
    plan is found without working the choice out again.
    """
    if settings.python:
        py = os.path.realpath(shutil.which(settings.python) or settings.python)
        return {"python": py, "python_stat": _stat_id(py)}
    if not argv:
        py = os.path.realpath(sys.executable)
        return {"python": py, "python_stat": _stat_id(py)}
    exe = _command_path(argv[0])
    if exe is None:
        return {"command": argv[0], "command_stat": None}
    real = os.path.realpath(exe)
    return {"command": real, "command_stat": _stat_id(real)}


def _cache_key(argv: Sequence[str], settings: Settings, env: Mapping[str, str]) -> str:
    ident: dict[str, Any] = {
        "version": __version__,
        "format": PLAN_CACHE_FORMAT,
        **_command_identity(argv, settings),
        "zluda_dir": str(settings.zluda_dir) if settings.zluda_dir else None,
        "release": settings.release,
        "manifest": str(settings.manifest) if settings.manifest else None,
        "env": {k: env.get(k) for k in _ENV_KEYS},
        "hip_env": sorted((k.upper(), v) for k, v in env.items() if k.upper().startswith("HIP_PATH")),
        "gfx": host_gfx(settings, env),  # GPU x HIP rules: another GPU (HIP_VISIBLE_DEVICES) may pick another
    }
    if ident["manifest"]:
        ident["manifest_stat"] = _stat_id(ident["manifest"])
    text = json.dumps(ident, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _inputs_of(target: TargetProfile, layout: ReleaseLayout, choice: TargetChoice,
               extra: Sequence[str] = ()) -> dict[str, list[int] | None]:
    files: set[str] = set()
    for chosen in (choice.python, choice.binary):
        if chosen:
            files.add(os.path.realpath(shutil.which(chosen) or chosen))
    for obj in target.objects:
        files.add(obj.path)
    for lib in target.libraries:
        if lib.resolved and lib.resolved.path:
            files.add(lib.resolved.path)
    torch = target.torch
    if torch and torch.path:
        files.add(str(Path(torch.path) / "version.py"))
        files.add(str(Path(torch.path) / "lib"))
    if target.startup is not None and target.startup.pth_file:
        files.add(target.startup.pth_file)  # an edited ._pth (import site on or off) changes the hook
    for shim in layout.shims:
        files.add(shim.path)
    files.add(layout.root)
    # where the shims' own dependencies (ROCm) are looked for: a new install invalidates the plan
    files.add("/etc/ld.so.cache")
    files.update(extra)
    return {f: _stat_id(f) for f in sorted(files)}


def _plan_digest(inputs: object, plan: object) -> str:
    """What a cache entry's payload hashes to: an entry not exactly as written (a torn or edited file, a
    wrong type anywhere in it) is never carried out, it is planned again."""
    text = json.dumps({"inputs": inputs, "plan": plan}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _load_cached_plan(path: Path) -> ShimPlan | None:
    """The plan cached at ``path`` while every file it was computed from is unchanged; None (plan again)
    for anything else: no file, a corrupt one, one whose payload is not as it was written."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    inputs, plan = data.get("inputs"), data.get("plan")
    if not isinstance(inputs, dict) or not inputs or not isinstance(plan, dict):
        return None
    if data.get("sha256") != _plan_digest(inputs, plan):
        return None
    if any(_stat_id(f) != ident for f, ident in inputs.items()):
        return None
    try:
        return ShimPlan.from_dict(plan)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _store_plan(path: Path, plan: ShimPlan, inputs: Mapping[str, object]) -> None:
    payload = plan.to_dict()
    plain_inputs = json.loads(json.dumps(inputs))  # as it reads back (tuples as lists)
    atomic_write_json(path, {"inputs": plain_inputs, "plan": payload,
                             "sha256": _plan_digest(plain_inputs, json.loads(json.dumps(payload)))},
                      compact=True)


def prepare_plan(
    argv: Sequence[str],
    settings: Settings,
    *,
    env: Mapping[str, str] | None = None,
    use_cache: bool = True,
    trust_on_first_use: bool = False,
    download: bool = True,
) -> ShimPlan:
    """Inspect the target the command runs, pick the release, and plan (cached). ``download=False``
    (``zluda-run plan``) never downloads: an uncached release is planned from the manifest."""
    run_env = dict(os.environ if env is None else env)
    cache_file = CachePaths(settings.cache_dir).plans / f"{_cache_key(argv, settings, run_env)}.json"
    if use_cache:
        cached = _load_cached_plan(cache_file)
        if cached is not None:
            return _with_host_facts(dataclasses.replace(cached, argv=tuple(argv)), run_env, settings)
    from zluda_runner.plan.build import make_plan

    choice = choose_target(argv, settings)
    target = inspect_target(choice, settings, run_env)
    if target is None:
        source = release_for(settings, os_name=_host_os(), cuda_major=None,
                             trust_on_first_use=trust_on_first_use, download=download, env=run_env)
        target = assumed_target(argv, source.layout)
    else:
        source = release_for(
            settings,
            os_name=target.os,
            cuda_major=target.cuda_major,
            cuda_version=target.cuda_version,
            trust_on_first_use=trust_on_first_use,
            download=download,
            env=run_env,
        )
    if source.not_downloaded is not None:
        return _with_host_facts(_provisional_plan(target, source, argv, run_env), run_env, settings)
    plan = make_plan(target, source.layout, release=source.ref, argv=argv, base_env=run_env)
    plan = dataclasses.replace(plan, warnings=(*plan.warnings, *_assumed(target)))
    if use_cache:
        with contextlib.suppress(OSError):  # a read-only cache only costs speed
            from zluda_runner.plan.shimdeps import rocm_dirs

            extra = [*plan.library_path, *rocm_dirs(run_env),
                     *filter(None, run_env.get("LD_LIBRARY_PATH", "").split(":"))]
            if plan.os == "windows":  # where the dependency walk looked for HIP's DLLs
                from zluda_runner.plan.windows_deps import walk_inputs

                extra.extend(walk_inputs(run_env, plan.path_prepend))
            _store_plan(cache_file, plan, _inputs_of(target, source.layout, choice, extra))
    # the defaults and the host's conflicts are never cached: the host's facts are read each time
    return _with_host_facts(plan, run_env, settings)


def _with_host_facts(plan: ShimPlan, env: Mapping[str, str], settings: Settings) -> ShimPlan:
    """What a plan says of the host, read fresh each time (never cached): the defaults, then the HIP SDK
    conflicts and the GPU x HIP rules the host breaks."""
    from zluda_runner.plan.defaults_facts import with_defaults

    plan = with_defaults(plan, settings, env)
    return _with_rule_warnings(_with_host_conflicts(plan, env, settings), env, settings)


def _with_rule_warnings(plan: ShimPlan, env: Mapping[str, str], settings: Settings) -> ShimPlan:
    """The manifest's GPU x HIP rules the GPU the workload uses (after the plan's own ``HIP_VISIBLE_DEVICES``
    default) breaks with the host's HIP, each a warning in the rule's words, with its fix and source
    (:func:`zluda_runner.release.gpurules.rule_warnings`: what selection and ``doctor`` say)."""
    from zluda_runner.release.selection import host_os

    if plan.os != host_os():
        return plan
    gfx = host_gfx(settings, {**env, **plan.env})
    if gfx is None:
        return plan
    found = host_hip_found(env)
    if found.version is None:
        return plan
    from zluda_runner.core.errors import ZludaRunnerError
    from zluda_runner.release.gpurules import rule_warnings
    from zluda_runner.release.manifest import load_current_manifest

    try:
        manifest = load_current_manifest(settings.manifest, settings.cache_dir)
    except ZludaRunnerError:  # the release check says what is wrong with the manifest
        return plan
    found_rules = rule_warnings(manifest.gpu_hip_rules, gfx, found.version, plan.os, found.origin)
    new = [w for w in found_rules if w not in plan.warnings]
    return dataclasses.replace(plan, warnings=(*plan.warnings, *new)) if new else plan


def _with_host_conflicts(plan: ShimPlan, env: Mapping[str, str], settings: Settings) -> ShimPlan:
    """A Windows launch's HIP SDK conflicts (several SDKs, a HIP runtime mix between the release's DLLs and
    the SDK's math libraries: :mod:`zluda_runner.host.hipsdk`), each a warning with its fix; read fresh
    each time (never cached), under ``ZLUDA_RUNNER_ROOT`` when that names a fake tree."""
    if plan.os != "windows":
        return plan
    from zluda_runner.host.fs import ROOT_ENV, root_from_env
    from zluda_runner.host.hipsdk import plan_warnings, release_dlls

    dlls = release_dlls(Path(plan.release.root)) if plan.release is not None else []
    found = plan_warnings(root_from_env(env.get(ROOT_ENV) or ""), env, dlls, cache_dir=settings.cache_dir)
    return dataclasses.replace(plan, warnings=(*plan.warnings, *found)) if found else plan


def _provisional_plan(target: TargetProfile, source: ReleaseSource, argv: Sequence[str],
                      env: Mapping[str, str]) -> ShimPlan:
    """A plan from the manifest alone (never cached: the files it describes do not exist yet)."""
    from zluda_runner.plan.build import make_plan
    from zluda_runner.plan.shimdeps import ShimDeps, resolve_shim_deps
    from zluda_runner.plan.shimfacts import provisional_facts

    def deps(shims: Sequence[str]) -> ShimDeps:
        return resolve_shim_deps([s for s in shims if os.path.exists(s)], env)

    plan = make_plan(target, source.layout, release=source.ref, argv=argv, base_env=env,
                     facts_reader=provisional_facts, deps_resolver=deps)
    return dataclasses.replace(plan, provisional=True,
                               warnings=(source.not_downloaded or "", *plan.warnings, *_assumed(target)))


def _assumed(target: TargetProfile) -> list[str]:
    """The target's warnings that say what was assumed about it (it could not be inspected)."""
    return [w for w in target.warnings if w.startswith(ASSUMED_PREFIX)]


# --------------------------------------------------------------------------- apply


def linux_launch(plan: ShimPlan, cache_dir: Path) -> LinuxLaunch:
    """The loader set-up for a Linux plan: link folder, redirector, environment (creates files).

    Every path handed to the workload is absolute (a child that changes folder keeps the set-up).
    The redirector's map names the link-folder entries, which is what it accepts (it refuses every
    other search candidate for a mapped name); the link folder is first on LD_LIBRARY_PATH.
    """
    from zluda_runner.launch.linux import LinuxLaunch, prepare_link_dir

    cache_dir = Path(os.path.abspath(cache_dir))
    launch = LinuxLaunch(env=dict(plan.env), ld_library_path=[os.path.abspath(p) for p in plan.library_path])
    if plan.link_map:
        launch.link_dir = prepare_link_dir(cache_dir, {k: Path(v) for k, v in plan.link_map.items()})
    if plan.audit_library:
        from zluda_runner.launch.redirect import MAP_ENV, build_redirector, write_redirect_map

        if plan.audit_library == "ours":
            launch.ld_audit.append(str(build_redirector(cache_dir)))
            links = launch.link_dir
            mapping = {k: (links / k if links is not None and k in plan.link_map else Path(v))
                       for k, v in plan.redirect_map.items()}
            launch.env[MAP_ENV] = str(write_redirect_map(cache_dir, mapping))
        else:
            launch.ld_audit.append(os.path.abspath(plan.audit_library))
    return launch


def launch_env(plan: ShimPlan, cache_dir: Path, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full environment the workload gets under ``plan`` (``ZLUDA_RUNNER_RELEASE`` names the release,
    so a workload can tell it runs through zluda-run)."""
    env = dict(os.environ if base_env is None else base_env)
    if plan.release is not None:
        env[RELEASE_ENV] = plan.release.id or plan.release.root
    if plan.os == "windows":
        env.update(plan.env)
        if plan.path_prepend:
            env["PATH"] = os.pathsep.join([*plan.path_prepend, *filter(None, [env.get("PATH")])])
        return env
    from zluda_runner.launch.linux import compose_env
    from zluda_runner.launch.startup import linux_startup_env

    env = compose_env(env, linux_launch(plan, cache_dir))
    env.update(linux_startup_env(plan, cache_dir, env))  # the start-up defaults' sitecustomize
    return env


def refuse_if_fatal(plan: ShimPlan, force: bool) -> None:
    """A fatal verdict stops the launch before the workload starts (exit 3, a check failed)."""
    fatal = plan.fatal
    if not fatal or force:
        return
    # one line per distinct problem: a missing ROCm library stops every shim that needs it
    who_by_problem: dict[str, list[str]] = {}
    for b in fatal:
        for problem in b.problems or b.reasons[-1:] or ["fatal"]:
            shim, sep, rest = problem.partition(" needs ")
            key, who = (f"needs {rest}", shim) if sep and " " not in shim else (problem, b.need)
            if who not in who_by_problem.setdefault(key, []):
                who_by_problem[key].append(who)
    lines = [f"{', '.join(who)}: {key}" for key, who in who_by_problem.items()]
    raise FatalPlanError(
        "the plan predicts this launch will fail:\n  " + "\n  ".join(lines),
        hint="see {cmd:plan -- CMD} for the full reasons; {opt:force} runs it anyway",
    )


def expected_bindings(plan: ShimPlan) -> dict[str, Path]:
    """Needed name -> the shim the loader must take, for --verify-load."""
    return {
        b.need: Path(b.shim)
        for b in plan.bindings
        if b.action == "replace" and b.shim and plan.os == "linux"
    }


def check_argv(argv: Sequence[str]) -> None:
    """A command there is to run, in words the system can pass (text, no NUL): else LaunchError."""
    from zluda_runner.launch.process import command_words

    if not command_words(argv):
        raise LaunchError("no command to run", hint="{usage}")
