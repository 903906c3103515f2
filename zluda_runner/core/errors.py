"""One error hierarchy: every expected fault carries a message and a hint.

The CLI prints ``error: <message>`` and ``hint: <hint>`` and exits non-zero;
it never shows a traceback for a :class:`ZludaRunnerError`. Credentials in a URL inside a
message or hint are masked when it is set (:func:`zluda_runner.core.redact.redact_text`).

A message or hint is written once, neutral: an option or an action the reader should take is
markup (``{opt:zluda_dir DIR}``, ``{cmd:doctor}``, :mod:`zluda_runner.core.wording`), and reading
``hint``/``message``/``str(exc)`` words it for the current front end (a Python caller by default:
``Options(zluda_dir=...)``, ``zluda_runner.run_doctor()``; the command line: ``--zluda-dir DIR``,
`` `zluda-run doctor` ``). ``raw_hint``/``raw_message`` are the neutral texts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from zluda_runner.core import exitcodes
from zluda_runner.core.redact import redact_text
from zluda_runner.core.wording import Audience, render


class ZludaRunnerError(Exception):
    """An expected fault: what went wrong (``message``) and what to do (``hint``)."""

    exit_code = exitcodes.ERROR
    kind: ClassVar[str] = "error"  # stable, for programs: the class name less Error/Fault, kebab-case

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.kind = cls.__dict__.get("kind") or re.sub(r"(?<=.)(?=[A-Z])", "-", re.sub(
            r"(Error|Fault)$", "", cls.__name__)).lower()

    def __init__(self, message: str, hint: str | None = None, *,
                 details: Mapping[str, object] | None = None) -> None:
        super().__init__(redact_text(message))
        self.message = message
        self.hint = hint
        self.details: Mapping[str, object] = dict(details or {})  # stable data for programs (--json)

    @property
    def message(self) -> str:
        """What went wrong, worded for the current front end."""
        return render(self._message)

    @message.setter
    def message(self, value: str) -> None:
        self._message = redact_text(value)

    @property
    def raw_message(self) -> str:
        """The message as written (its markup unrendered)."""
        return self._message

    @property
    def hint(self) -> str | None:
        """What to do, worded for the current front end."""
        return None if self._hint is None else render(self._hint)

    @hint.setter
    def hint(self, value: str | None) -> None:
        self._hint = None if value is None else redact_text(value)

    @property
    def raw_hint(self) -> str | None:
        """The hint as written (its markup unrendered)."""
        return self._hint

    def message_for(self, reader: Audience) -> str:
        """The message worded for ``reader`` (``"python"`` or ``"command line"``)."""
        return render(self._message, reader)

    def hint_for(self, reader: Audience) -> str | None:
        """The hint worded for ``reader`` (``"python"`` or ``"command line"``)."""
        return None if self._hint is None else render(self._hint, reader)

    def __str__(self) -> str:
        hint = self.hint
        return f"{self.message}\nhint: {hint}" if hint else self.message


class UsageFault(ZludaRunnerError):
    """The command line itself is wrong (click's usage errors, as a JSON-reportable error)."""

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int = exitcodes.USAGE) -> None:
        super().__init__(message, hint or "see `zluda-run --help` or `zluda-run COMMAND --help`")
        self.exit_code = exit_code


class CheckFailedError(ZludaRunnerError):
    """A check or comparison failed (a fatal plan verdict, a failed load proof): exit 3."""

    exit_code = exitcodes.CHECK_FAILED


class ManifestError(ZludaRunnerError):
    """The release manifest is missing, malformed or names nothing usable."""


class SelectionError(ZludaRunnerError):
    """No release fits the host and the target."""


class FetchError(ZludaRunnerError):
    """A download failed (network, HTTP status, TLS)."""


class ChecksumError(FetchError):
    """Downloaded bytes do not match the expected SHA-256."""


class UnsafeArchiveError(ZludaRunnerError):
    """An archive tried to write outside its folder, or holds links/devices we refuse."""


class ArchiveError(ZludaRunnerError):
    """An archive is truncated, corrupt or of an unknown format, or cannot be unpacked the same
    everywhere (``UnusableArchiveError``: a name too long or too deep, names that differ only by case)."""


class CacheError(ZludaRunnerError):
    """The cache folder is unusable."""


class BinaryFormatError(ZludaRunnerError):
    """A file is not a readable ELF/PE file of a kind we handle."""


class TargetError(ZludaRunnerError):
    """The target interpreter / torch install cannot be inspected or is not a CUDA build."""


class PlanError(ZludaRunnerError):
    """A shim plan cannot be made, or a verdict is fatal."""


class FatalPlanError(PlanError):
    """A plan verdict is fatal: the launch is refused before the workload starts (exit 3)."""

    exit_code = exitcodes.CHECK_FAILED


class LockError(ZludaRunnerError):
    """A lock file (``zluda.lock``) that cannot be read or is not one: the field at fault named."""


class LockDriftError(CheckFailedError):
    """What a lock pins is not what this host has: a locked file changed, or (``--strict``) another GPU,
    HIP or torch (exit 3)."""


class LaunchError(ZludaRunnerError):
    """The workload could not be started."""


class CommandNotFoundError(LaunchError):
    """The workload's command does not exist (exit 127, like a shell)."""

    exit_code = exitcodes.NOT_FOUND


class PlacementError(ZludaRunnerError):
    """Windows DLL placement, its journal, restore or drift check failed."""


class FileInUseError(ZludaRunnerError):
    """A file to replace or delete is held by a running program (Windows): refused, nothing changed.

    ``paths`` names each blocked file; the message names the programs holding them where Windows
    could tell (:mod:`zluda_runner.core.replace`)."""

    def __init__(self, message: str, hint: str | None = None, *, paths: tuple[str, ...] = ()) -> None:
        super().__init__(message, hint)
        self.paths = paths


class NotWritableError(ZludaRunnerError):
    """A folder to change is not writable by this user (a Python under Program Files run without
    administrator rights, a folder of another user, a read-only mount): refused before anything
    changed. ``paths`` names the folder; ``details``: ``folder``, ``owner`` (POSIX, where known)."""

    def __init__(self, message: str, hint: str | None = None, *, paths: tuple[str, ...] = (),
                 details: Mapping[str, object] | None = None) -> None:
        super().__init__(message, hint, details=details)
        self.paths = paths


IN_USE = "loaded or held open by a running program"


@dataclass(frozen=True)
class InUse:
    """A file that cannot be replaced or deleted now: why, and the programs holding it (if known)."""

    path: str
    reason: str
    holders: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.holders:
            return f"{self.path} ({self.reason}: {', '.join(self.holders)})"
        return f"{self.path} ({self.reason})"


class NativeBuildError(ZludaRunnerError):
    """A native helper (shim, fixture) could not be compiled."""


class ProbeError(ZludaRunnerError):
    """The coverage probe could not run at all."""


class TraceError(ZludaRunnerError):
    """A trace could not be taken or read."""


class CommandNotExecutableError(LaunchError):
    """The workload's command exists but cannot be executed (exit 126, like a shell)."""

    exit_code = exitcodes.NOT_EXECUTABLE


class HostError(ZludaRunnerError):
    """The doctor, a warmup or an A/B run was given something it cannot use (a bad root, a bad command)."""
