"""The wheel's build hook: on Linux x86-64 the wheel carries our redirector and tracer compiled here
(zluda_runner/devtools/prebuilt.py), tagged ``py3-none-linux_x86_64`` (``auditwheel repair`` gives it the
manylinux tag its symbol versions allow), so a machine without a C compiler runs the launch. Elsewhere, or
with ``ZLUDA_RUNNER_PURE_WHEEL=1`` (the wheel the Windows tests install), or where no C compiler is
found at build time, the wheel stays pure Python and the shims are compiled on first use."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PURE_ENV = "ZLUDA_RUNNER_PURE_WHEEL"


class PrebuiltShims(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable" or os.environ.get(PURE_ENV) == "1":
            return
        if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
            return
        sys.path.insert(0, self.root)
        from zluda_runner.core.errors import NativeBuildError
        from zluda_runner.devtools.prebuilt import build_prebuilt

        self._work = tempfile.TemporaryDirectory(prefix="zluda-runner-prebuilt-")
        try:
            placed = build_prebuilt(Path(self._work.name))
        except NativeBuildError as exc:  # no compiler here either: a pure wheel, compiled on first use
            self.app.display_warning(f"zluda-runner: shims not prebuilt ({exc.message}); the wheel stays "
                                     "pure Python and compiles them on first use")
            return
        for built, inside in placed.items():
            build_data["force_include"][str(built)] = inside
        build_data["pure_python"] = False
        build_data["tag"] = "py3-none-linux_x86_64"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            work.cleanup()
