"""The run's target (:func:`choose_target`) and the one release resolver that ``run``, ``plan``, ``fetch``,
``releases``, ``doctor``, ``poc`` and ``warmup`` share: the constraints as the run has them (host HIP, GPU,
the target torch's CUDA, ``--release``/``--archive``) judged by
:func:`zluda_runner.release.selection.resolve`; a run judges its context's (:func:`resolve_run`), a command
outside one reads the host
(:func:`resolve_release`; a caller that knows a constraint already gives it)."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.conduct.context import RunContext
from zluda_runner.core.hipfound import HipFound
from zluda_runner.core.paths import CachePaths, real_path
from zluda_runner.core.settings import Settings
from zluda_runner.launch.process import command_path

if TYPE_CHECKING:
    from zluda_runner.inspection.profile import TargetProfile, TorchInfo
    from zluda_runner.plan.model import ReleaseRef
    from zluda_runner.release.layout import ReleaseLayout
    from zluda_runner.release.model import Manifest
    from zluda_runner.release.selection import Resolution


@dataclass(frozen=True)
class ReleaseSource:
    layout: ReleaseLayout
    ref: ReleaseRef
    not_downloaded: str | None = None  # the note a plan from the manifest alone carries


def archive_release(manifest: Manifest, archive: Path | None, os_name: str) -> str | None:
    """``--archive FILE`` is looked at before any release is chosen: a file that is not there is an
    error; a file named as one manifest asset for this OS picks that release; a name several releases
    share is refused (which one the file is cannot be told)."""
    if archive is None:
        return None
    from zluda_runner.core.errors import FetchError, SelectionError

    path = archive.expanduser()
    if not path.is_file():
        raise FetchError(f"the archive {path} given with {{opt:archive}} is not a file",
                         hint="give the path of the release archive you downloaded by hand")
    named = list(dict.fromkeys(r.id for r in manifest.releases for a in r.assets
                               if a.name == path.name and a.os == os_name))
    if len(named) > 1:
        raise SelectionError(f"the archive name {path.name} is an asset of several releases "
                             f"({', '.join(named)}): which one this file is cannot be told",
                             hint=f"name the release: {{cmd:fetch {named[0]} --archive {path}}}, "
                             f"{{opt:release {named[0]}}} for a run")
    return named[0] if named else None


def resolve_release(
    settings: Settings,
    *,
    os_name: str | None = None,
    hip: str | None = None,
    found: HipFound | None = None,
    cuda: int | None = None,
    torch_python: str | None = None,
    gfx: str | None = None,
    channel: str = "stable",
    release: str | None = None,
    env: Mapping[str, str] | None = None,
    read_host: bool = True,
    manifest: Manifest | None = None,
) -> Resolution:
    """The release a run would take (``.require()`` raises "nothing fits"). For this host's OS, what is not
    given is read from the host in ``env`` (:func:`~zluda_runner.plan.defaults_facts.read_host`): the HIP
    (``found``; ``hip``: a version given instead), the GPU, and with ``torch_python`` its torch's CUDA;
    ``read_host=False``: neither HIP nor GPU. ``release`` (default ``--release``, else the ``--archive``
    file's) restricts the choice; ``manifest``: the one in use where loaded already."""
    from zluda_runner.release.manifest import load_current_manifest
    from zluda_runner.release.selection import host_os, parse_cuda, resolve

    here = (os_name or host_os()) == host_os()
    if hip is not None:
        found = HipFound(hip, f"HIP {hip}")
    if read_host and here and (found is None or gfx is None):
        from zluda_runner.plan.defaults_facts import read_host as read_host_facts

        host = read_host_facts(os.environ if env is None else env)
        found, gfx = found or host.quick.hip, gfx or host.workload_gfx(settings.defaults)
    note = None
    if cuda is None and torch_python is not None and here:
        text, note = target_cuda(torch_python)
        cuda = parse_cuda(text)
    manifest = manifest or load_current_manifest(settings.manifest, settings.cache_dir)
    wanted = release or settings.release or archive_release(manifest, settings.archive,
                                                            os_name or host_os() or "linux")
    return resolve(manifest, found, os=os_name, cuda=cuda, release=wanted, channel=channel, gfx=gfx,
                   cuda_note=note)


def resolve_run(ctx: RunContext, *, os_name: str | None = None, cuda: int | None = None,
                torch_python: str | None = None) -> Resolution:
    """The release the run of ``ctx`` takes (:func:`resolve_release` on the run's context): its host's HIP
    and GPU where the target is of this host's OS (``os_name``, default this host's), the target's CUDA
    major (``cuda``, or read from ``torch_python``'s torch), the manifest in use; nothing read again."""
    from zluda_runner.release.selection import host_os

    here = (os_name or host_os()) == host_os()
    return resolve_release(ctx.settings, os_name=os_name, found=ctx.host.quick.hip if here else None,
                           gfx=ctx.gfx if here else None, cuda=cuda, torch_python=torch_python,
                           read_host=False, manifest=ctx.manifest)


def resolved(ctx: RunContext, *, os_name: str | None, cuda: int | None,
             torch_python: str | None = None) -> RunContext:
    """``ctx`` with the release its run takes (:attr:`RunContext.resolution`), resolved once per run, here,
    for the target (its OS, its torch's CUDA major), and judged before anything is downloaded: a host whose
    HIP no release takes, or whose GPU with that HIP breaks a GPU x HIP rule, is refused
    (:class:`NothingFitsError`, exit 3), the ways offered to another HIP only those for this torch
    (``cuda``, or read from ``torch_python``'s). A ``--zluda-dir`` run resolves nothing."""
    if ctx.settings.zluda_dir is not None:
        return ctx
    resolution = resolve_run(ctx, os_name=os_name, cuda=cuda, torch_python=torch_python)
    resolution.require()
    return dataclasses.replace(ctx, resolution=resolution)


def release_for(ctx: RunContext, *, trust_on_first_use: bool = False, download: bool = True) -> ReleaseSource:
    """The release folder: ``--zluda-dir`` as is, else the run's resolution's pick (:func:`resolved`),
    fetched into the cache. ``download=False`` (``plan``): a release not in the
    cache is described by the manifest alone, and nothing is downloaded."""
    from zluda_runner.plan.model import ReleaseRef
    from zluda_runner.release.layout import layout_from_manifest, scan_release_dir

    settings = ctx.settings
    if settings.zluda_dir is not None:
        layout = scan_release_dir(settings.zluda_dir)
        return ReleaseSource(layout, ReleaseRef(None, None, None, None, layout.root))
    from zluda_runner.release.cache import cached_release_dir, ensure_release
    from zluda_runner.release.manifest import resolve_release_root

    if ctx.resolution is None:
        raise ValueError("release_for needs a resolved run context (resolved)")
    choice = ctx.resolution.require()
    release, asset = choice.release, choice.asset
    if not download and cached_release_dir(settings.cache_dir, release, asset) is None:
        from zluda_runner.release.provisional import download_note, provisional_layout

        root = CachePaths(settings.cache_dir).releases / release.id / "(not downloaded)"
        ref = ReleaseRef(release.id, release.version, release.flavour, asset.name, str(root))
        return ReleaseSource(provisional_layout(root, asset), ref, download_note(release.id, asset))
    unpacked = ensure_release(release, asset, settings.cache_dir, archive=settings.archive,
                              trust_on_first_use=trust_on_first_use or settings.trust_on_first_use)
    root = resolve_release_root(unpacked, asset)
    ref = ReleaseRef(release.id, release.version, release.flavour, asset.name, str(root))
    return ReleaseSource(layout_from_manifest(root, asset), ref)


# --------------------------------------------------------------------------- target


@dataclass(frozen=True)
class TargetChoice:
    """How the target is found: an interpreter, or a binary."""

    python: str | None
    binary: str | None


def choose_target(argv: Sequence[str], settings: Settings) -> TargetChoice:
    """``--python`` wins; else the interpreter the command runs; else the command's binary."""
    if settings.python:
        return TargetChoice(settings.python, None)
    if argv:
        from zluda_runner.binfmt.elf import peek_elf_header
        from zluda_runner.binfmt.pe import is_pe
        from zluda_runner.inspection.interpreter import interpreter_for_command

        python = interpreter_for_command(argv)
        if python:
            return TargetChoice(python, None)
        exe = command_path(argv[0])
        if exe and Path(exe).is_file() and (peek_elf_header(exe) is not None or is_pe(exe)):  # ELF or PE
            return TargetChoice(None, real_path(exe))
        return TargetChoice(None, None)  # a shell or batch script, a launcher: not inspectable
    return TargetChoice(sys.executable, None)


def inspect_target(choice: TargetChoice, settings: Settings, env: Mapping[str, str]) -> TargetProfile | None:
    from zluda_runner.inspection.inspect import inspect_path, inspect_python

    if choice.binary:
        return inspect_path(Path(choice.binary), cache_dir=settings.cache_dir, env=env)
    return inspect_python(choice.python, cache_dir=settings.cache_dir, env=env) if choice.python else None


ASSUMED_PREFIX = "could not inspect the target"


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



def installed_torch(python: str) -> tuple[str, TorchInfo | None]:
    """``python``'s executable and its torch as installed (None: no torch), read without inspecting it
    (a CPU or ROCm build too); :class:`~zluda_runner.core.errors.TargetError` when it does not run."""
    from zluda_runner.inspection.interpreter import probe_interpreter, torch_info

    facts = probe_interpreter(python)
    torch = torch_info(Path(facts.torch_path), facts.torch_version_py) if facts.torch_path else None
    return facts.executable, torch


def target_cuda(python: str | None) -> tuple[str | None, str | None]:
    """The CUDA of ``python``'s torch (default: this interpreter), read as ``plan`` reads it, or None
    and a note that says why not (the release is then selected for any CUDA)."""
    from zluda_runner.core.errors import TargetError
    from zluda_runner.inspection.interpreter import check_cuda_build

    try:
        executable, info = installed_torch(python or sys.executable)
        if info is None:
            return None, f"no torch in {executable}: CUDA not checked ({{opt:python PY}} or {{opt:cuda N}})"
        check_cuda_build(info, executable)
    except TargetError as exc:
        return None, f"{exc.message}: CUDA not checked ({{opt:python PY}} or {{opt:cuda N}})"
    return info.cuda, None
