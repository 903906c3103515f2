"""The words a front end offers before it calls the API: what an option accepts (``os``, ``channel``,
a results ``kind``, torch ``dtypes``) and the environment variables it reads. Imported by a front end's
command that needs them (not by :mod:`zluda_runner.api` itself, which stays light); provisional."""

from __future__ import annotations

from zluda_runner.host.fs import ROOT_ENV
from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES
from zluda_runner.release.model import OSES
from zluda_runner.release.selection import CHANNEL_CHOICES
from zluda_runner.results.schema import KINDS

CHANNELS: tuple[str, ...] = tuple(CHANNEL_CHOICES)
"""``choose_release(channel=...)``: ``stable``, or ``preview`` (also nightly and CI preview builds)."""
RESULT_KINDS: tuple[str, ...] = tuple(KINDS)
"""The kinds of recorded runs (``list_results(kind=...)``, ``record_result``)."""
TORCH_DTYPES: tuple[str, ...] = tuple(DEFAULT_DTYPES)
"""The torch dtypes ``run_probe(torch=True)`` probes by default."""
FAKE_ROOT_ENV: str = ROOT_ENV
"""The environment variable naming a fake system tree (``run_doctor(root=...)``)."""

__all__ = ["CHANNELS", "FAKE_ROOT_ENV", "OSES", "RESULT_KINDS", "TORCH_DTYPES"]
