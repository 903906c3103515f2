"""Safe extraction of zip and tar.gz release archives.

We never call ``extractall`` (and do not lean on tarfile's ``filter=``, which
Python 3.10 lacks on many builds). Every member is checked *before anything is
written*:

- names are relative: no leading ``/`` or ``\\``, no drive letter, no ``..``
  component (``\\`` counts as a separator, as Windows would read it);
- symbolic links must stay inside the folder (relative target, resolved
  lexically from the link's own folder); hard links must name a regular file
  of the same archive;
- device files, fifos and other special members are refused;
- no member may be written *through* a symbolic link of the archive, and no
  name may appear twice as a file/link;
- names must be writable on every file system a release is installed on: no component over
  :data:`MAX_NAME_PART` bytes, no name (or link target) over :data:`MAX_NAME_BYTES` bytes or
  :data:`MAX_DEPTH` folders deep, no two names that differ only by case (Windows and macOS keep
  one of them), and no name Windows cannot create as named (a reserved character, a trailing period
  or space, a device name such as ``NUL``);
- the total unpacked size is bounded by what a release can be: at most
  :data:`MAX_RATIO` times the archive's own size (releases are binaries, which
  pack 2-5x; a bomb packs 1000x), at least :data:`RATIO_FLOOR` (tiny archives),
  never over :data:`MAX_TOTAL_BYTES`. A tar.gz is listed lazily, so even the
  listing stops once the headers read claim more than that: a bomb costs at most
  the bound in decompression, and nothing is written.

Then regular files and folders are written (``O_EXCL``, no set-uid bits, the
executable bit kept), hard links become copies, and symbolic links are made
last, so nothing is ever written through one; finally each link is resolved on
disk and must land inside the folder. Symbolic links inside the folder are
legitimate: ZLUDA's Linux tarballs hold ``libcuda.so -> libcuda.so.1``. Where
the platform cannot make symbolic links (Windows without the privilege), a
link to a file is replaced by a copy of it.

Callers extract into a fresh temporary folder and delete it on any error.

Messages show a member's name shortened to :data:`SHOWN_NAME` characters (its start and end, an
ellipsis between), so an absurd name never floods the terminal.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from zluda_runner.core.errors import ArchiveError, CacheError, UnsafeArchiveError
from zluda_runner.core.fsutil import file_kind
from zluda_runner.release.names import (
    DRIVE,
    MAX_NAME_BYTES,
    UNSAFE_HINT,
    UNUSABLE_HINT,
    UnusableArchiveError,
    check_case_collisions,
    check_name_fits,
    clean_name,
    shown,
)
from zluda_runner.release.names import (
    quoted as _q,
)
from zluda_runner.release.names import (
    shortened as _short,
)

ARCHIVE_FORMATS = ("zip", "tar.gz")
CHUNK_SIZE = 1 << 20
MAX_MEMBERS = 200_000
#: no ZLUDA release unpacks to more than a few hundred MB (the v6 Windows zip: 35 MB packed)
MAX_TOTAL_BYTES = 2 << 30
#: unpacked / packed: shared libraries deflate 2-5x; 25x leaves room and refuses bombs (~1000x)
MAX_RATIO = 25
#: small archives (test trees, a trimmed release) may unpack to this much whatever their ratio
RATIO_FLOOR = 64 << 20


Kind = Literal["file", "dir", "symlink", "hardlink"]

_READ_ERRORS: tuple[type[BaseException], ...] = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    NotImplementedError,  # zip compression methods we cannot read
    RuntimeError,  # encrypted zip members
)


@dataclass(frozen=True)
class Member:
    """One archive member, checked and with a clean relative POSIX name."""

    name: str
    kind: Kind
    size: int
    executable: bool
    link: str | None  # symlink: target as stored; hardlink: clean member name
    source: Any  # TarInfo or ZipInfo


def archive_format(filename: str) -> str:
    """``"zip"`` or ``"tar.gz"`` from an archive's file name."""
    lower = filename.lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    raise ArchiveError(
        f"{filename} is neither a .zip nor a .tar.gz archive.",
        hint="ZLUDA releases ship as .zip (Windows) or .tar.gz (Linux); pass one of those.",
    )


def archive_stem(filename: str) -> str:
    """The file name without its archive suffix."""
    lower = filename.lower()
    for suffix in (".tar.gz", ".tgz", ".zip"):
        if lower.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def safe_extract(archive: Path, fmt: str, dest: Path) -> list[str]:
    """Extract ``archive`` (``"zip"`` or ``"tar.gz"``) into the empty folder ``dest``.

    Returns the member names written. Raises UnsafeArchiveError before writing
    anything when a member is unsafe, ArchiveError for a truncated or corrupt
    archive (``dest`` may then hold part of the tree: the caller removes it).
    """
    if fmt not in ARCHIVE_FORMATS:
        raise ArchiveError(
            f"Unknown archive format {fmt!r} for {archive}.", hint=f"Use one of {', '.join(ARCHIVE_FORMATS)}."
        )
    dest.mkdir(parents=True, exist_ok=True)
    limit = unpacked_limit(archive.stat().st_size) if archive.is_file() else MAX_TOTAL_BYTES
    with _open(archive, fmt) as reader:
        members = _checked(archive, reader.members(limit), limit)
        _write_all(archive, reader, members, dest)
    return [m.name for m in members]


def unpacked_limit(archive_size: int) -> int:
    """The most bytes an archive of ``archive_size`` bytes may unpack to (see the module doc)."""
    return min(MAX_TOTAL_BYTES, max(RATIO_FLOOR, MAX_RATIO * archive_size))


def _bomb(archive: Path, claimed: int, limit: int) -> UnsafeArchiveError:
    size = archive.stat().st_size if archive.is_file() else 0
    ratio = f" ({claimed // size}x its own {size} bytes)" if size else ""
    return UnsafeArchiveError(
        f"{archive.name} would unpack to more than {claimed} bytes{ratio}, over the {limit} bytes a ZLUDA "
        "release of that size can hold; refused as an archive bomb and nothing was written.",
        hint=UNSAFE_HINT,
    )


# --------------------------------------------------------------------------- readers


class _Reader:
    def members(self, limit: int) -> list[Member]:
        raise NotImplementedError

    def open_member(self, member: Member) -> IO[bytes]:
        raise NotImplementedError


class _TarReader(_Reader):
    def __init__(self, archive: Path, tf: tarfile.TarFile) -> None:
        self.archive = archive
        self.tf = tf

    def members(self, limit: int) -> list[Member]:
        out: list[Member] = []
        claimed = 0
        # Lazily: the next header is read (decompressing past this member's data) only once the
        # sizes claimed so far are within the limit. The whole stream is read: truncation shows here.
        for info in self.tf:
            claimed += max(0, info.size) + 512
            if claimed > limit:
                raise _bomb(self.archive, claimed, limit)
            if len(out) >= MAX_MEMBERS:
                raise UnsafeArchiveError(
                    f"{self.archive.name} holds more than {MAX_MEMBERS} members; refused.", hint=UNSAFE_HINT
                )
            name = clean_name(self.archive, info.name)
            if name is None:
                if info.isdir():
                    continue
                raise UnsafeArchiveError(
                    f"{self.archive.name}: member {_q(info.name)} has an empty name and is not a folder.",
                    hint="The archive is malformed; do not use it.",
                )
            executable = bool(info.mode & 0o111)
            if info.isreg():
                out.append(Member(name, "file", info.size, executable, None, info))
            elif info.isdir():
                out.append(Member(name, "dir", 0, True, None, info))
            elif info.issym():
                out.append(Member(name, "symlink", 0, False, info.linkname, info))
            elif info.islnk():
                target = clean_name(self.archive, info.linkname)
                if target is None:
                    raise UnsafeArchiveError(
                        f"{self.archive.name}: hard link {_q(info.name)} has an empty target.",
                        hint="The archive is malformed; do not use it.",
                    )
                out.append(Member(name, "hardlink", 0, executable, target, info))
            else:
                raise UnsafeArchiveError(
                    f"{self.archive.name}: member {_q(info.name)} is {_tar_kind(info)}; "
                    "release archives hold only files, folders and links, so it was refused.",
                    hint="Do not use this archive; download the release again from its official URL.",
                )
        return out

    def open_member(self, member: Member) -> IO[bytes]:
        stream = self.tf.extractfile(member.source)
        if stream is None:  # pragma: no cover - regular members always have data
            raise ArchiveError(f"{self.archive.name}: cannot read {shown(member.name)}.",
                               hint="Re-download it.")
        return stream


class _ZipReader(_Reader):
    def __init__(self, archive: Path, zf: zipfile.ZipFile) -> None:
        self.archive = archive
        self.zf = zf

    def members(self, limit: int) -> list[Member]:
        out: list[Member] = []
        for info in self.zf.infolist():
            name = clean_name(self.archive, info.filename)
            if name is None:
                if info.is_dir():
                    continue
                raise UnsafeArchiveError(
                    f"{self.archive.name}: member {_q(info.filename)} has an empty name.",
                    hint="The archive is malformed; do not use it.",
                )
            if info.flag_bits & 0x1:
                raise ArchiveError(
                    f"{self.archive.name}: member {_q(info.filename)} is encrypted.",
                    hint="Release archives are not encrypted; download the official archive.",
                )
            mode = info.external_attr >> 16
            fmt = stat.S_IFMT(mode)
            if info.is_dir() or fmt == stat.S_IFDIR:
                out.append(Member(name, "dir", 0, True, None, info))
            elif fmt == stat.S_IFLNK:
                target = self._read_small(info)
                out.append(Member(name, "symlink", 0, False, target, info))
            elif fmt in (0, stat.S_IFREG):
                out.append(Member(name, "file", info.file_size, bool(mode & 0o111), None, info))
            else:
                raise UnsafeArchiveError(
                    f"{self.archive.name}: member {_q(info.filename)} is {file_kind(mode)}; "
                    "release archives hold only files, folders and links, so it was refused.",
                    hint="Do not use this archive; download the release again from its official URL.",
                )
        return out

    def _read_small(self, info: zipfile.ZipInfo) -> str:
        if info.file_size > 4096:
            raise UnsafeArchiveError(
                f"{self.archive.name}: link {_q(info.filename)} has an oversized target.",
                hint="The archive is malformed; do not use it.",
            )
        try:
            return self.zf.read(info).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArchiveError(
                f"{self.archive.name}: link {_q(info.filename)} has an unreadable target.",
                hint="The archive is malformed; do not use it.",
            ) from exc

    def open_member(self, member: Member) -> IO[bytes]:
        return self.zf.open(member.source)


@contextmanager
def _open(archive: Path, fmt: str) -> Iterator[_Reader]:
    try:
        if fmt == "zip":
            zf = zipfile.ZipFile(archive)
            reader: _Reader = _ZipReader(archive, zf)
            closer: Any = zf
        else:
            tf = tarfile.open(archive, mode="r:gz")  # noqa: SIM115 - closed below
            reader = _TarReader(archive, tf)
            closer = tf
    except FileNotFoundError as exc:
        raise ArchiveError(f"Archive {archive} does not exist.", hint="Check the path.") from exc
    except _READ_ERRORS as exc:
        raise _corrupt(archive, fmt, exc) from exc
    try:
        yield reader
    except (UnsafeArchiveError, ArchiveError, CacheError):
        raise
    except _READ_ERRORS as exc:
        raise _corrupt(archive, fmt, exc) from exc
    finally:
        closer.close()


def _corrupt(archive: Path, fmt: str, exc: BaseException) -> ArchiveError:
    return ArchiveError(
        f"{archive.name} is not a readable {fmt} archive: it is truncated or corrupt "
        f"({_short(' '.join(str(exc).split()).rstrip(' .'), 200) or type(exc).__name__}).",
        hint="Delete it and download it again ({cmd:cache clean} then {cmd:fetch}), "
        "or fetch it by hand and pass {opt:archive FILE}.",
    )


# --------------------------------------------------------------------------- checks




def _check_symlink(archive: Path, member: Member) -> None:
    target = (member.link or "").replace("\\", "/")
    if not target or "\x00" in target:
        raise UnsafeArchiveError(
            f"{archive.name}: link {_q(member.name)} has an empty target.", hint=UNSAFE_HINT
        )
    size = len(target.encode("utf-8", "replace"))
    if size > MAX_NAME_BYTES:
        raise UnusableArchiveError(
            f"{archive.name}: link {_q(member.name)} has a target of {size} bytes, over the "
            f"{MAX_NAME_BYTES} a release's link may have; the archive was refused and nothing was written.",
            hint=UNUSABLE_HINT,
        )
    if target.startswith("/") or DRIVE.match(target):
        raise UnsafeArchiveError(
            f"{archive.name}: link {_q(member.name)} points to the absolute path {_q(member.link)}, outside "
            "the release folder; the archive was refused and nothing was written.",
            hint=UNSAFE_HINT,
        )
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(member.name), target))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeArchiveError(
            f"{archive.name}: link {_q(member.name)} -> {_q(member.link)} points outside the release folder; "
            "the archive was refused and nothing was written.",
            hint=UNSAFE_HINT,
        )


def _checked(archive: Path, members: list[Member], limit: int) -> list[Member]:
    if len(members) > MAX_MEMBERS:
        raise UnsafeArchiveError(f"{archive.name} holds {len(members)} members; refused.", hint=UNSAFE_HINT)
    total = sum(m.size for m in members)
    if total > limit:
        raise _bomb(archive, total, limit)
    kinds: dict[str, Kind] = {}
    links: set[str] = set()
    for m in members:
        check_name_fits(archive, m.name)
        if m.kind == "symlink":
            _check_symlink(archive, m)
            links.add(m.name)
        elif m.kind == "hardlink" and kinds.get(m.link or "") not in ("file", "hardlink"):
            raise UnsafeArchiveError(
                f"{archive.name}: hard link {_q(m.name)} -> {_q(m.link)} does not name an earlier file of "
                "the archive (it could reach outside the release folder); refused, nothing was written.",
                hint=UNSAFE_HINT,
            )
        previous = kinds.get(m.name)
        if previous is not None and not (previous == "dir" and m.kind == "dir"):
            raise UnsafeArchiveError(
                f"{archive.name}: {_q(m.name)} appears twice (as {previous} and {m.kind}); refused.",
                hint=UNSAFE_HINT,
            )
        kinds[m.name] = m.kind
    check_case_collisions(archive, (m.name for m in members))
    for m in members:
        parts = m.name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in links:
                raise UnsafeArchiveError(
                    f"{archive.name}: member {_q(m.name)} would be written through the link {_q(prefix)}; "
                    "refused, nothing was written.",
                    hint=UNSAFE_HINT,
                )
            if kinds.get(prefix) in ("file", "hardlink"):
                raise ArchiveError(
                    f"{archive.name}: {_q(m.name)} lies under {_q(prefix)}, which is a file.",
                    hint="The archive is malformed; download it again.",
                )
    return members


# --------------------------------------------------------------------------- writing


def _write_all(archive: Path, reader: _Reader, members: list[Member], dest: Path) -> None:
    root = dest.resolve()
    m: Member | None = None
    try:
        for m in members:
            target = root / m.name
            if m.kind == "dir":
                target.mkdir(parents=True, exist_ok=True)
            elif m.kind == "file":
                target.parent.mkdir(parents=True, exist_ok=True)
                with reader.open_member(m) as src:
                    _write_file(archive, src, target, m)
            elif m.kind == "hardlink":
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_new(root / (m.link or ""), target, m.executable)
        symlinks = [m for m in members if m.kind == "symlink"]
        for m in symlinks:
            _make_symlink(root, m)
        for m in symlinks:  # checked once all exist: a later link can redirect an earlier one
            _check_resolved(archive, root, m)
    except (UnsafeArchiveError, ArchiveError):
        raise
    except OSError as exc:
        filename = str(exc.filename or "")
        if m is not None and _too_long(exc, filename or str(root / m.name)):
            raise UnusableArchiveError(
                f"{archive.name}: member {_q(m.name)} cannot be unpacked here: its path "
                f"{shown(filename or str(root / m.name))} is too long for this file system "
                f"({exc.strerror or 'name too long'}); nothing was cached.",
                hint="Choose a cache location with a shorter path ({opt:cache_dir} or ZLUDA_RUNNER_CACHE). "
                + UNUSABLE_HINT.replace("This archive", "If the name itself is absurd, the archive", 1),
            ) from exc
        if filename.startswith(str(root)):
            raise CacheError(
                f"Could not write {shown(filename)} while unpacking {archive.name}: {exc.strerror or exc}.",
                hint=f"Check free space and permissions in {dest.parent}.",
            ) from exc
        raise


#: Windows' ERROR_FILENAME_EXCED_RANGE; a path over MAX_PATH without long paths is ERROR_PATH_NOT_FOUND
_WIN_TOO_LONG = 206
_WIN_MAX_PATH = 260


def _too_long(exc: OSError, path: str) -> bool:
    """The write failed because the path is too long for the file system (or for Windows' MAX_PATH)."""
    if exc.errno == errno.ENAMETOOLONG or getattr(exc, "winerror", None) == _WIN_TOO_LONG:
        return True
    return os.name == "nt" and isinstance(exc, FileNotFoundError) and len(path) >= _WIN_MAX_PATH


def _mode(executable: bool) -> int:
    return 0o755 if executable else 0o644


def _create(path: Path, executable: bool) -> IO[bytes]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, _mode(executable))
    return os.fdopen(fd, "wb")


def _write_file(archive: Path, src: IO[bytes], target: Path, member: Member) -> None:
    written = 0
    with _create(target, member.executable) as out:
        while True:
            chunk = src.read(CHUNK_SIZE)
            if not chunk:
                break
            written += len(chunk)
            if written > member.size:
                raise ArchiveError(
                    f"{archive.name}: {shown(member.name)} holds more data than its header says.",
                    hint="The archive is corrupt; download it again.",
                )
            out.write(chunk)
    if written != member.size:
        raise ArchiveError(
            f"{archive.name}: {shown(member.name)} ended after {written} of {member.size} bytes "
            "(truncated archive).",
            hint="Delete it and download it again, or fetch it by hand and pass {opt:archive FILE}.",
        )


def _copy_new(source: Path, target: Path, executable: bool) -> None:
    with source.open("rb") as src, _create(target, executable) as out:
        shutil.copyfileobj(src, out, CHUNK_SIZE)


def _inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


def _make_symlink(root: Path, member: Member) -> None:
    link_path = root / member.name
    target = member.link or ""
    link_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(target, link_path)
    except OSError:
        # No symlink privilege (Windows): copy the file it names, when that is a file inside.
        resolved = (link_path.parent / target).resolve()
        if not (_inside(root, resolved) and resolved.is_file()):
            raise
        _copy_new(resolved, link_path, bool(resolved.stat().st_mode & 0o111))


def _check_resolved(archive: Path, root: Path, member: Member) -> None:
    link_path = root / member.name
    target = member.link or ""
    if not _inside(root, link_path.resolve()):
        raise UnsafeArchiveError(
            f"{archive.name}: link {_q(member.name)} -> {_q(target)} resolves outside the release folder "
            f"(through other links); refused, nothing was written outside.",
            hint=UNSAFE_HINT,
        )


_TAR_FORMATS = {tarfile.CHRTYPE: stat.S_IFCHR, tarfile.BLKTYPE: stat.S_IFBLK, tarfile.FIFOTYPE: stat.S_IFIFO}


def _tar_kind(info: tarfile.TarInfo) -> str:
    fmt = _TAR_FORMATS.get(info.type)
    return file_kind(fmt) if fmt is not None else f"a special member (type {info.type!r})"
