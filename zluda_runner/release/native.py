"""Native ROCm as the alternative to ZLUDA: does AMD publish PyTorch wheels for this GPU on this OS?

The manifest's ``native_rocm`` section (:class:`~zluda_runner.release.model.NativeRocm`) says, per GPU and
OS and where a source says so, whether AMD's own ROCm PyTorch wheels exist (ROCm 10.0.0, HIP 7.x, torch
2.13.0+rocm10.0.0); where no source was found it says that, not a guess. :func:`native_wheels` is the one
decision ``doctor`` and ``releases`` (and the API's results) show: where wheels exist, one line with the
``zluda-run ab --b-python`` command that compares them with ZLUDA on the user's own workload.
:func:`parse_native_rocm` validates the section field by field (a wrong one is rejected by its name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.wording import render
from zluda_runner.release.checker import DATE_RE, VERSION_RE, Checker, parse_fact
from zluda_runner.release.model import (
    NATIVE_SUPPORT,
    OSES,
    UNVERIFIED,
    Fact,
    Manifest,
    NativeRocm,
    NativeWheelEntry,
    unverified_fact,
)

_SHORT_COMMIT = re.compile(r"@([0-9a-f]{8})[0-9a-f]{32}")  # a source's commit, as a line shows it
#: what each of TheRock's columns means to a user
SUPPORT_WORDS = {"built": "built and published, not yet sanity-tested by AMD",
                 "sanity-tested": "sanity-tested by AMD", "release-ready": "release-ready by AMD"}
#: the action that compares the two on the user's workload: ZLUDA (A) against the native wheels' python (B)
COMPARE = "{cmd:ab --b-python PY -- SCRIPT}"


@dataclass(frozen=True)
class NativeWheels(JsonMixin):
    """The answer for one GPU on one OS: ``available`` True (AMD publishes the wheels: ``install`` gets
    one, ``compare`` runs the user's workload on both), False (a source says none), None (no source
    found: ``source.note`` says what was looked at). ``support``: how far AMD has taken the GPU
    (``built``, ``sanity-tested``, ``release-ready``; empty when not known)."""

    gfx: str
    os: str
    available: bool | None
    support: str
    rocm: str
    hip: str
    torch: str
    index_url: str
    install: str
    source: Fact = field(default_factory=unverified_fact)
    torch_source: Fact = field(default_factory=unverified_fact)

    def line(self) -> str | None:
        """The one line ``doctor`` and ``releases`` say where the wheels exist (None elsewhere): what AMD
        publishes for this GPU, how to install it beside this torch, the command that compares the two."""
        if not self.available:
            return None
        first = _SHORT_COMMIT.sub(r"@\1", self.source.sources[0].ref) if self.source.sources else ""
        cite = f"{self.source.label()}: {first}"
        return (f"AMD publishes native ROCm PyTorch wheels for {self.gfx} on {self.os} (torch {self.torch}, "
                f"{SUPPORT_WORDS.get(self.support, self.support)}): compare them with ZLUDA on your "
                f"workload: {COMPARE}, PY a venv's python after `{self.install}` [{cite}]")

    def to_dict(self) -> dict[str, Any]:
        line = self.line()
        return super().to_dict() | {"compare": render(COMPARE) if line else None,
                                    "line": render(line) if line else None}


def native_wheels(manifest: Manifest, gfx: str | None, os: str | None) -> NativeWheels | None:
    """Whether the manifest's data says AMD publishes native ROCm PyTorch wheels for ``gfx`` on ``os``
    (None when the GPU or the OS is not known, or the manifest has no ``native_rocm`` section). A GPU no
    entry names is answered as not known, with that said."""
    native = manifest.native_rocm
    if native is None or not gfx or os not in OSES:
        return None
    entry = next((e for e in native.wheels if gfx in e.gfx and e.os in (None, os)), None)
    if entry is None:
        entry = NativeWheelEntry([gfx], os, None, "", unverified_fact(
            f"the manifest names no source for {gfx} on {os}: not known whether AMD publishes wheels for it"))
    return NativeWheels(
        gfx=gfx, os=os, available=entry.available, support=entry.support, rocm=native.rocm, hip=native.hip,
        torch=native.torch, index_url=native.index_url,
        install=f'pip install --index-url {native.index_url} "torch[device-{gfx}]=={native.torch}"',
        source=entry.source, torch_source=native.torch_source,
    )


# --------------------------------------------------------------------------- the manifest's section


def parse_native_rocm(data: Any, source: str) -> NativeRocm:
    """Validate the manifest's ``native_rocm`` object (a fault names the field)."""
    c = Checker(data, "native_rocm", source)
    native = NativeRocm(
        rocm=c.string("rocm", pattern=VERSION_RE),
        hip=c.string("hip", pattern=VERSION_RE),
        torch=c.string("torch"),
        index_url=c.string("index_url"),
        date=c.string("date", required=False, nullable=True, pattern=DATE_RE),
        source=parse_fact(c.get("source"), "native_rocm source", source),
        torch_source=parse_fact(c.get("torch_source"), "native_rocm torch_source", source),
    )
    raw = c.get("recommended", required=False)
    if raw is not None:
        native.recommended = parse_fact(raw, "native_rocm recommended", source)
    if not native.torch.endswith(f"+rocm{native.rocm}") or not VERSION_RE.match(native.torch.split("+")[0]):
        c.fail("torch", f"must be the torch version built for ROCm {native.rocm} (X.Y.Z+rocm{native.rocm}), "
               f"got {native.torch!r}")
    url = urlsplit(native.index_url)
    if url.scheme != "https" or not url.netloc or url.username or url.password:
        c.fail("index_url", "must be an https:// package index URL without credentials, "
               f"got {native.index_url!r}")
    for name in ("source", "torch_source"):
        if getattr(native, name).kind == UNVERIFIED:
            c.fail(name, "must name its sources: the section is recorded only with them")
    raw = c.objects("wheels", nonempty=True)
    native.wheels = [_parse_entry(item, i, source) for i, item in enumerate(raw)]
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(native.wheels):
        for gfx in entry.gfx:
            for os_name in (entry.os,) if entry.os else OSES:
                if (gfx, os_name) in seen:
                    Checker(raw[i], f"native_rocm wheels #{i}", source).fail(
                        "gfx", f"{gfx} on {os_name} is already answered by wheels #{seen[(gfx, os_name)]}")
                seen[(gfx, os_name)] = i
    c.done()
    return native


def _parse_entry(data: Any, index: int, source: str) -> NativeWheelEntry:
    c = Checker(data, f"native_rocm wheels #{index}", source)
    gfx = c.gfx_names()
    available = c.get("available")
    if available is not None and not isinstance(available, bool):
        c.fail("available", f"must be true, false or null (no source found), got {available!r}")
    entry = NativeWheelEntry(
        gfx=gfx,
        os=c.string("os", required=False, nullable=True, choices=OSES),
        available=available,
        support=c.string("support", required=False, default="", choices=NATIVE_SUPPORT) or "",
        source=parse_fact(c.get("source"), f"native_rocm wheels #{index} source", source),
    )
    unverified = entry.source.kind == UNVERIFIED
    if available is None and not unverified:
        c.fail("source", "must be unverified (its note saying what was looked at) when available is null")
    if available is not None and unverified:
        c.fail("available", "must be null when no source says it: an unverified fact is not a guess")
    if available and not entry.support:
        c.fail("support", f"is required with available true: one of {', '.join(NATIVE_SUPPORT)}")
    if not available and entry.support:
        c.fail("support", "is only for wheels a source says are published")
    c.done()
    return entry
