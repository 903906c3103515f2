"""The one release resolver: which release a run takes, for ``run``, ``plan``, ``fetch``, ``releases``,
``doctor``, ``poc`` and ``warmup`` alike (:class:`~zluda_runner.release.selection.Resolution`).

The constraints are read here, once, as the run reads them: the host's HIP (and where it was read), the
GPU the workload gets, the target torch's CUDA, the release asked for (``--release``, or the
hand-downloaded ``--archive`` by its name). A caller that knows one of them already (the doctor's own
host facts, ``releases --hip``) gives it; the judging is :func:`zluda_runner.release.selection.resolve`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core.hipfound import HipFound
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.settings import Settings

if TYPE_CHECKING:
    from zluda_runner.plan.model import ReleaseRef
    from zluda_runner.release.layout import ReleaseLayout
    from zluda_runner.release.model import Manifest
    from zluda_runner.release.selection import Resolution


@dataclass(frozen=True)
class ReleaseSource:
    layout: ReleaseLayout
    ref: ReleaseRef
    not_downloaded: str | None = None  # the note a plan from the manifest alone carries


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
) -> Resolution:
    """The release the run takes (never raises "nothing fits": ``resolution.require()`` does).

    For this host's OS, what is not given is read from the host in ``env`` as the run reads it: the HIP
    (``found``; ``hip`` is a version the caller gave instead), the GPU (``gfx``), and with
    ``torch_python`` the CUDA of that interpreter's torch (``cuda`` not given); ``read_host=False``: none
    of them. ``release`` (default ``--release``, else the ``--archive`` file's release) restricts it."""
    from zluda_runner.release.manifest import load_current_manifest
    from zluda_runner.release.selection import host_os, resolve

    here = read_host and (os_name or host_os()) == host_os()
    if hip is not None:
        found = HipFound(hip, f"HIP {hip}")
    elif found is None and here:
        found = host_hip_found(env)
    if gfx is None and here:
        gfx = host_gfx(settings, env)
    note = None
    if cuda is None and torch_python is not None and here:
        from zluda_runner.conduct.target import target_cuda
        from zluda_runner.release.selection import parse_cuda

        text, note = target_cuda(torch_python)
        cuda = parse_cuda(text)
    manifest = load_current_manifest(settings.manifest, settings.cache_dir)
    wanted = release or settings.release or archive_release(manifest, settings.archive,
                                                            os_name or host_os() or "linux")
    return resolve(manifest, found, os=os_name, cuda=cuda, release=wanted, channel=channel, gfx=gfx,
                   cuda_note=note)


def host_release_check(settings: Settings, argv: Sequence[str] = (), found: HipFound | None = None,
                       gfx: str | None = None) -> None:
    """Before the target is inspected: a host whose HIP no release for this OS takes, or whose GPU with
    that HIP breaks one of the manifest's GPU x HIP rules, is refused here (:class:`NothingFitsError`,
    exit 3). The refusal is judged with the target torch's CUDA too (read only then), so the ways it
    offers to another HIP name only what would be selected for this torch."""
    if settings.zluda_dir is not None:
        return
    from zluda_runner.release.selection import host_os

    if host_os() is None:
        return
    resolution = resolve_release(settings, found=found, gfx=gfx)
    if resolution.chosen is not None:
        return
    from zluda_runner.conduct.target import choose_target

    python = choose_target(argv, settings).python
    if python is not None:
        resolution = resolve_release(settings, found=resolution.found, gfx=resolution.constraints.gfx,
                                     torch_python=python)
    resolution.require()


def release_for(
    settings: Settings,
    *,
    os_name: str,
    cuda_major: int | None,
    trust_on_first_use: bool = False,
    download: bool = True,
    env: Mapping[str, str] | None = None,
) -> ReleaseSource:
    """The release folder: ``--zluda-dir`` as is, else the resolver's pick for this host and CUDA major
    (:func:`resolve_release`), fetched into the cache. ``download=False`` (``plan``): a release not in the
    cache is described by the manifest alone, and nothing is downloaded."""
    from zluda_runner.plan.model import ReleaseRef
    from zluda_runner.release.layout import layout_from_manifest, scan_release_dir

    if settings.zluda_dir is not None:
        layout = scan_release_dir(settings.zluda_dir)
        return ReleaseSource(layout, ReleaseRef(None, None, None, None, layout.root))
    from zluda_runner.release.cache import cached_release_dir, ensure_release
    from zluda_runner.release.manifest import resolve_release_root

    choice = resolve_release(settings, os_name=os_name, cuda=cuda_major, env=env).require()
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
