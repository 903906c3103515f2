"""Where ROCm (Linux) or the AMD HIP SDK (Windows) is installed, and its version.

The doctor asks :func:`find_rocm` to judge the install; the version itself comes from
:mod:`zluda_runner.host.hipversion`, as for every other command, and where each of its libraries is
taken from from :mod:`zluda_runner.host.libraries`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipversion import find_host_hip
from zluda_runner.host.model import RocmInstall
from zluda_runner.host.tools import ToolRunner


def find_rocm(
    fs: HostFs, env: Mapping[str, str], platform: str, tools: ToolRunner | None = None
) -> RocmInstall | None:
    """The install HIP programs would use, found by :func:`~zluda_runner.host.hipversion.find_host_hip`
    (the one finder every command uses: ROCm folders, the HIP SDK, distribution packages).

    ``tools`` (may be None) runs ``hipconfig`` when a ROCm folder has no readable version.
    """
    found = find_host_hip(fs.root, env, platform)
    if found is None:
        return None
    version, source = found.version, found.source
    if version is None and found.kind == "rocm" and tools is not None:
        out = tools([str(fs.path(f"{found.path}/bin/hipconfig")), "--version"])
        if out and out.strip():
            version, source = out.strip().splitlines()[0], "hipconfig --version"
    return RocmInstall(found.kind, Path(found.path), version, source, found.other_package)
