"""Terminal views of Windows DLL placement: what was placed, restored, and the state of torch/lib."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.launch.windows.placing import PlacementResult
from zluda_runner.launch.windows.restoring import PlacementStatus, RestoreResult


def render_placement(result: PlacementResult | None, defaults_hook: Path | None = None) -> str:
    if result is None:
        return "nothing to place: this plan loads ZLUDA by preload or injector (see `--dry-run`)"
    lines = [f"already placed in {result.torch_lib}"] if result.already_placed else []
    lines += [f"placed   {name}" for name in result.placed]
    if defaults_hook is not None:
        lines.append(f"placed   {defaults_hook} (applies the plan's defaults when python runs without "
                     "zluda-run; `zluda-run restore` removes it)")
    return "\n".join(lines)


def render_restore(result: RestoreResult) -> str:
    lines = [f"restored {name}" for name in result.restored]
    lines += [f"removed  {name} (was not there before)" for name in result.removed]
    lines += [f"kept     {name} (written by another program since placement, pip upgrading torch or by "
              "hand: that file is kept; its original from before is dropped)" for name in result.kept]
    lines += [f"removed  {name} (left by an interrupted placement)" for name in result.temp_files_removed]
    return "\n".join(lines) or "nothing to restore"


def render_status(st: PlacementStatus) -> str:
    lines = [f"state: {st.state} ({st.torch_lib})"]
    lines += [f"  {f.state:9} {f.name}" for f in st.files]
    lines += [f"drift: {line}" for line in st.drift]
    return "\n".join([*lines, st.advice] if st.advice else lines)
