"""Which release, and getting it: :func:`choose_release`, :func:`list_releases`, :func:`fetch`,
:func:`cached_release` and :func:`update_manifest`."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, to_settings, worded
from zluda_runner.core.argcheck import checked

if TYPE_CHECKING:
    from zluda_runner.core.settings import Settings
    from zluda_runner.release.listing import ReleasesReport
    from zluda_runner.release.native import NativeWheels
    from zluda_runner.release.obtain import Fetched
    from zluda_runner.release.selection import Resolution
    from zluda_runner.release.update import UpdateResult


@dataclass(frozen=True)
class Rejected:
    """A release asset that was not chosen, and why (``fits``: it would work but ranked lower)."""

    release: str
    asset: str
    reasons: tuple[str, ...]
    fits: bool


@dataclass(frozen=True)
class ReleaseChoice:
    """The release selected for a host and a target, with the reasons.

    Attributes:
        release: the manifest's release id (``upstream-v6``, ``fork-3.9.5``).
        version: the release's version.
        flavour: ``upstream`` or ``fork``.
        asset: the file name of the archive to fetch.
        url: where it is downloaded from (before any ``ZLUDA_RUNNER_MIRROR``).
        sha256: its SHA-256 as the manifest knows it (None: unknown; fetching it needs
            ``Options(trust_on_first_use=True)``).
        os: the OS selected for.
        hip: the HIP version selected for (given, or found on this host; None: any).
        hip_source: where that HIP version came from (``"given"``, ``"found on this host"``) or None.
        cuda: the CUDA major of the torch build selected for (None: any).
        needs: the HIP the asset needs, in words.
        serves: the CUDA majors of torch builds the asset serves.
        notes: what the caller should know about this choice (the selection's notes and the release's
            caveats).
        rejected: every other asset, with its reasons.
        warnings: facts of the host or the manifest that stand in the way (a stale manifest, a GPU that
            needs another HIP).
        native_wheels: whether AMD publishes native ROCm PyTorch wheels for the GPU selected for on this OS
            (``available``: True, False, or None where no source was found; ``install`` and ``compare``: how
            to get them and compare them with ZLUDA on the user's workload); None when no GPU is known.
    """

    release: str
    version: str
    flavour: str
    asset: str
    url: str
    sha256: str | None
    os: str
    hip: str | None
    hip_source: str | None
    cuda: int | None
    needs: str
    serves: tuple[int, ...]
    notes: tuple[str, ...]
    rejected: tuple[Rejected, ...]
    warnings: tuple[str, ...]
    native_wheels: NativeWheels | None = None


@checked
def choose_release(
    options: Options | None = None,
    *,
    os: str | None = None,
    hip: str | None = None,
    cuda: str | int | None = None,
    channel: str = "stable",
    gpu: str | None = None,
) -> ReleaseChoice:
    """The release ``run`` would use for a host and a target, and why (nothing is downloaded).

    Args:
        options: the manifest, release and ``python`` (whose torch's CUDA is read when ``cuda`` is
            not given and the selection is for this OS).
        os: ``"linux"`` or ``"windows"`` (default: this host's).
        hip: the HIP SDK / ROCm version to select for, e.g. ``"6.2"`` (default: found on this host when
            selecting for it).
        cuda: the CUDA of the torch build: ``11``, ``"12.8"`` or ``"cu118"``.
        channel: ``"stable"``, or ``"preview"`` to also offer nightly and CI preview builds.
        gpu: the GPU's gfx name (``"gfx1201"``): adds the manifest's per-GPU HIP rules as warnings.

    Raises:
        NothingFitsError: no release fits (its ``selection`` holds every asset's reasons).
        ManifestError: the manifest is missing or malformed.
    """
    with caller_errors():
        report, resolution = _releases(to_settings(options), os=os, hip=hip, cuda=cuda, channel=channel,
                                       gpu=gpu, select=True)
        assert resolution is not None  # select always resolves
        chosen, selection, c = resolution.require(), resolution.selection, resolution.constraints
    return ReleaseChoice(
        release=chosen.release.id, version=chosen.release.version, flavour=chosen.release.flavour,
        asset=chosen.asset.name, url=chosen.asset.url, sha256=chosen.asset.sha256, os=c.os, hip=c.hip,
        hip_source=report.hip_source, cuda=c.cuda,
        needs=chosen.asset.hip.describe(), serves=tuple(chosen.asset.cuda_majors),
        notes=(*chosen.notes, *chosen.release.caveats),
        rejected=tuple(Rejected(r.release_id, r.asset_name, tuple(r.reasons), r.fits)
                       for r in selection.rejected),
        warnings=tuple(report.warnings),
        native_wheels=report.native,
    )


@checked
def fetch(
    options: Options | None = None,
    *,
    version: str | None = None,
    os: str | None = None,
    hip: str | None = None,
    cuda: int | None = None,
    reinstall: bool = False,
    progress: bool = False,
) -> Fetched:
    """Download (or take from the cache), verify and unpack a release; ``.path`` is its library folder.

    The download is checked against the manifest's SHA-256 (``Options(archive=...)``: a
    hand-downloaded copy, checked the same way); a cached release is checked file by file against
    what was installed. ``ZLUDA_RUNNER_MIRROR`` in the environment replaces the upstream host.

    Args:
        options: the cache, manifest, ``release`` (when ``version`` is not given), ``archive`` and
            ``trust_on_first_use``.
        version: the release (id, version or tag); default: ``options.release``, else the one ``run``
            would take (for this host: its HIP, GPU and the CUDA of ``options.python``'s torch, unless
            ``os``/``hip``/``cuda`` say otherwise), judged before anything is downloaded.
        reinstall: replace the cached copy.
        progress: show a download progress bar on stderr (when it is a terminal).

    Raises:
        FetchError, ChecksumError, ArchiveError, UnsafeArchiveError, CacheError, NothingFitsError.
        KeyboardInterrupt (Ctrl-C): what was downloaded is kept, and the next fetch resumes it.
    """
    from zluda_runner.conduct.resolve import resolve_release
    from zluda_runner.release.cache import check_cache_folder, named_release
    from zluda_runner.release.obtain import fetch as fetch_release

    settings = to_settings(options)
    with caller_errors():
        check_cache_folder(settings.cache_dir)  # before the manifest update the cache may hold is looked for
        # a release named is fetched as named (an empty name is none: CacheError); else what run takes
        asked = settings.release if version is None else named_release(version)
        python = None if asked else settings.python or sys.executable
        choice = resolve_release(settings, os_name=os, hip=hip, cuda=cuda, torch_python=python, release=asked,
                                 read_host=not asked).require()
        done = fetch_release(choice, settings.cache_dir, archive=settings.archive,
                             trust_on_first_use=settings.trust_on_first_use, reinstall=reinstall,
                             progress=progress)
    aside = _zluda_dir_aside(settings, "this release")
    return dataclasses.replace(done, notes=[*done.notes, *(worded(a) for a in aside)]) if aside else done


@checked
def cached_release(version: str, options: Options | None = None) -> tuple[Path, ...]:
    """The unpacked folder(s) of release ``version`` in the cache (nothing is downloaded).

    Raises:
        CacheError: the release is not in the cache.
    """
    from zluda_runner.release.obtain import cached_folders

    settings = to_settings(options)
    with caller_errors():
        return tuple(cached_folders(settings.manifest, settings.cache_dir, version)[1])


@dataclass(frozen=True)
class ReleaseListing:
    """What :func:`list_releases` found: the manifest's releases (or the selection for a host and a
    target, with every asset's reasons), and what the results store knows of this host's GPU.

    Attributes:
        report: the listing (``report.selection`` is None when nothing was selected; ``report.nothing_fits``).
        recorded_on_this_gpu: one line per release the results store has runs for on this GPU target.
    """

    report: ReleasesReport
    recorded_on_this_gpu: tuple[str, ...]


@checked
def list_releases(
    options: Options | None = None,
    *,
    os: str | None = None,
    hip: str | None = None,
    cuda: str | int | None = None,
    channel: str = "stable",
    gpu: str | None = None,
    select: bool = True,
) -> ReleaseListing:
    """The manifest's releases, and (``select``) the one ``run`` would use for a host and a target; unlike
    :func:`choose_release`, nothing fitting is not an error (``listing.report.nothing_fits``).

    Args:
        os, hip, cuda, channel, gpu: as for :func:`choose_release`.
        select: select for the host and target; False: list every release of the manifest.

    Raises:
        ManifestError: the manifest is missing or malformed.
    """
    from os import environ  # (``os`` is the argument here)

    from zluda_runner.plan.defaults_facts import read_host

    settings = to_settings(options)
    with caller_errors():
        report = _releases(settings, os=os, hip=hip, cuda=cuda, channel=channel, gpu=gpu, select=select)[0]
    aside = _zluda_dir_aside(settings, "the release selected here")
    report = dataclasses.replace(report, warnings=[worded(w) for w in (*report.warnings, *aside)],
                                 every=not select)
    gfx = read_host(environ).recorded()["gfx"]  # the GPU as a recorded run names it
    if not gfx:  # nothing the store could know: not imported (a start-up under Wine pays per module)
        return ReleaseListing(report, ())
    from zluda_runner.results.recording import known_on_this_gpu

    return ReleaseListing(report, tuple(known_on_this_gpu(settings, gfx)))


def _zluda_dir_aside(settings: Settings, what: str) -> tuple[str, ...]:
    """The ZLUDA folder the caller gave (the option, or ``ZLUDA_RUNNER_ZLUDA_DIR``) is what every launch
    uses: a listing or a fetch that does not use it says so, rather than let a user believe the release
    they fetched is what runs."""
    if settings.zluda_dir is None:
        return ()
    return (f"{{opt:zluda_dir}} names {settings.zluda_dir}: a launch uses that folder, not {what} "
            "(leave it out, or unset ZLUDA_RUNNER_ZLUDA_DIR, to run a manifest release)",)


def _releases(settings: Settings, *, os: str | None, hip: str | None, cuda: str | int | None, channel: str,
              gpu: str | None, select: bool) -> tuple[ReleasesReport, Resolution | None]:
    """The manifest in use, and (``select``, or any constraint given) the resolution ``run`` makes: for this
    host's HIP and GPU (unless ``hip``, ``gpu``) and the target torch's CUDA (unless ``cuda``)."""
    from zluda_runner.conduct.resolve import resolve_release
    from zluda_runner.release.listing import HIP_FOUND, HIP_GIVEN, releases_report
    from zluda_runner.release.selection import parse_cuda

    major = parse_cuda(cuda)
    gpu = _gfx(gpu)
    given = (os, hip, major, settings.release, gpu)
    if not (select or channel != "stable" or any(v is not None for v in given)):
        return releases_report(settings.manifest, settings.cache_dir), None
    resolution = resolve_release(settings, os_name=os, hip=hip, cuda=major, gfx=gpu, channel=channel,
                                 torch_python=(settings.python or sys.executable) if select else None)
    found = resolution.found
    hip_source = HIP_GIVEN if hip else (HIP_FOUND if found is not None and found.version else None)
    return releases_report(settings.manifest, settings.cache_dir, resolution=resolution,
                           hip_source=hip_source), resolution


def _gfx(gpu: str | None) -> str | None:
    """The GPU given, as the gfx name the manifest's rules are written for (``GFX1100`` -> ``gfx1100``);
    a usage error for anything else (a marketing name, ``rx7900``), before the manifest is read."""
    from zluda_runner.core.errors import UsageFault
    from zluda_runner.host.gfx import normalize_gfx

    if gpu is None:
        return None
    gfx = normalize_gfx(gpu)
    if gfx is None:
        raise UsageFault(f"{gpu!r} (given by {{opt:gpu}}) is not a gfx name",
                         hint="give the GPU's LLVM target, e.g. {opt:gpu gfx1100} for an RX 7900 XTX "
                              "(`rocminfo | grep gfx` or {cmd:doctor} shows it)")
    return gfx


@checked
def update_manifest(url: str | None = None, options: Options | None = None, *,
                    allow_http: bool = False) -> UpdateResult:
    """Fetch a newer release manifest from ``url`` over TLS, validated, for every later call
    (``Options(manifest=...)`` still wins); an older, malformed or oversized one replaces nothing.

    Args:
        url: where to fetch it (default: ``$ZLUDA_RUNNER_MANIFEST_URL``, else the last update's URL).
        allow_http: accept a plain ``http://`` URL (no TLS) that is not 127.0.0.1.

    Raises:
        ManifestError, FetchError: nothing was replaced.
    """
    from zluda_runner.release.listing import update_url
    from zluda_runner.release.update import update_manifest as update

    settings = to_settings(options)
    with caller_errors():
        return update(settings.cache_dir, update_url(url, settings.cache_dir), allow_http=allow_http)
