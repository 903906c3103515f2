"""The doctor's data: options, one check's verdict, the report (JSON first)."""

from __future__ import annotations

import enum
import functools
import os
import platform as _platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.settings import Settings
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.gpus import HipQuery
from zluda_runner.host.hip import query_hip_isolated
from zluda_runner.release.native import NativeWheels
from zluda_runner.results.recordable import ResultRow, ResultRows

# Environment variables shown in the report's facts (they change what HIP / ZLUDA / torch do).
ENV_OF_INTEREST = (
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
    "ROCM_PATH",
    "HIP_PATH",
    "DISABLE_ADDMM_CUDA_LT",
    "ZLUDA_NVRTC_LIB",
    "AMD_LOG_LEVEL",
)


class Status(str, enum.Enum):
    """A check's verdict. ``NOT_APPLICABLE``: the check has no meaning on this host (a Windows HIP SDK
    check on Linux); like a skipped check it is neither a pass nor a failure, with or without
    ``--strict``, and it is recorded as neither."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


@dataclass(frozen=True)
class Check(JsonMixin):
    id: str
    status: Status
    message: str
    fix: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Findings:
    """What one area's checks found: its checks, and those it skipped (each with why, when known).

    ``a + b`` joins two in order; :func:`~zluda_runner.doctor.run.run_doctor` builds the report
    from them once."""

    checks: tuple[Check, ...] = ()
    skipped: tuple[str, ...] = ()

    def __add__(self, other: Findings) -> Findings:
        return Findings((*self.checks, *other.checks), (*self.skipped, *other.skipped))

    @classmethod
    def of(cls, *checks: Check | None, skipped: tuple[str, ...] = ()) -> Findings:
        """The checks given (None left out) and ``skipped``."""
        return cls(tuple(c for c in checks if c is not None), skipped)


@dataclass(frozen=True)
class DoctorReport(JsonMixin):
    facts: HostFacts
    checks: tuple[Check, ...] = ()
    skipped: tuple[str, ...] = ()
    exit_code: int = exitcodes.OK
    schema: int = JSON_SCHEMA_VERSION
    # AMD's native ROCm PyTorch wheels for the run's GPU on this OS (None: no GPU or no manifest)
    native_wheels: NativeWheels | None = None

    def count(self, status: Status) -> int:
        return sum(1 for c in self.checks if c.status is status)

    def check(self, check_id: str) -> Check | None:
        return next((c for c in self.checks if c.id == check_id), None)

    def result_rows(self) -> ResultRows:
        """Recorded (kind doctor): one row per check, ok = ok, fail = failing, warn and not_applicable
        neither; the host facts give the run's fingerprint
        (:class:`~zluda_runner.results.recordable.Recordable`)."""
        ok = {Status.OK: True, Status.FAIL: False}
        return ResultRows(
            rows=tuple(ResultRow(c.id, c.status.value, ok.get(c.status), c.message) for c in self.checks),
            summary={"exit_code": self.exit_code},
            host_facts=self.facts,
        )


@dataclass(frozen=True)
class DoctorOptions:
    """What to look at; what is not given is this machine's (its environment, platform, HIP runtime,
    tools and torch), all filled in when it is made. Under a fake ``root`` the HIP runtime, the tools
    (rocminfo / hipconfig) and the torch check are left out unless given."""

    root: Path | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    platform: str = ""  # sys.platform value
    machine: str = ""
    hip_query: HipQuery | None = None
    run_tools: bool | None = None
    check_torch: bool | None = None
    python: str = ""  # the target interpreter (the torch check); default: the settings', else this one
    settings: Settings | None = None  # for the release and cache checks
    strict: bool = False
    home: Path | None = None

    def __post_init__(self) -> None:
        fake, env = self.root is not None, dict(self.env)
        hip_query = self.hip_query or (None if fake else functools.partial(query_hip_isolated, env=env))
        filled = {"env": env, "platform": self.platform or sys.platform, "hip_query": hip_query,
                  "machine": self.machine or _platform.machine(),
                  "run_tools": not fake if self.run_tools is None else self.run_tools,
                  "check_torch": not fake if self.check_torch is None else self.check_torch,
                  "python": self.python or (self.settings and self.settings.python) or sys.executable}
        for name, value in filled.items():
            object.__setattr__(self, name, value)  # frozen: set once, while it is made
