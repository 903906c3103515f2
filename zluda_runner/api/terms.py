"""The words a front end offers before it calls the API: what an option accepts (``os``, ``channel``,
a results ``kind``, torch ``dtypes``) and the environment variables it reads. Imported by a front end's
command that needs them (not by :mod:`zluda_runner.api` itself, which stays light); provisional.

Each word is imported from its home when it is first used (:func:`__getattr__`): ``results list`` pays
for the results' kinds, not for the probe suite that the torch dtypes come from."""

from __future__ import annotations

CHANNELS: tuple[str, ...]
"""``choose_release(channel=...)``: ``stable``, or ``preview`` (also nightly and CI preview builds)."""
RESULT_KINDS: tuple[str, ...]
"""The kinds of recorded runs (``list_results(kind=...)``, ``record_result``)."""
TORCH_DTYPES: tuple[str, ...]
"""The torch dtypes ``run_probe(torch=True)`` probes by default."""
FAKE_ROOT_ENV: str
"""The environment variable naming a fake system tree (``run_doctor(root=...)``)."""
OSES: tuple[str, ...]
"""The operating systems a release is built for (``choose_release(os=...)``)."""

__all__ = ["CHANNELS", "FAKE_ROOT_ENV", "OSES", "RESULT_KINDS", "TORCH_DTYPES"]


def __getattr__(name: str) -> object:
    """A word, from the module that owns it (imported on first use)."""
    if name == "CHANNELS":
        from zluda_runner.release.selection import CHANNEL_CHOICES

        return tuple(CHANNEL_CHOICES)
    if name == "RESULT_KINDS":
        from zluda_runner.results.schema import KINDS

        return tuple(KINDS)
    if name == "TORCH_DTYPES":
        from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES

        return tuple(DEFAULT_DTYPES)
    if name == "FAKE_ROOT_ENV":
        from zluda_runner.host.fs import ROOT_ENV

        return ROOT_ENV
    if name == "OSES":
        from zluda_runner.release.model import OSES

        return OSES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
