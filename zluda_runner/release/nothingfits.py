"""The one "nothing fits" error every path gives (run, plan, warmup, fetch, releases, doctor): what was
found, what each release for this OS would need, the GPU x HIP rules the host breaks with their fixes, and
how to get there on this system. The long list stays behind ``zluda-run releases``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from zluda_runner.core import exitcodes
from zluda_runner.core.errors import SelectionError

if TYPE_CHECKING:
    from zluda_runner.release.selection import Selection


@dataclass(frozen=True)
class HipRoute:
    """A way to another HIP on this host: what to do (``how``) and the HIP versions it gives."""

    how: str
    gives: tuple[str, ...]


@dataclass(frozen=True)
class HipFound:
    """The host's HIP as the user should read it (``HIP 5.2 from Debian's libamdhip64-5 package``),
    and the ways to another one on this system (:func:`zluda_runner.host.quick.hip_found`)."""

    version: str | None
    text: str
    routes: tuple[HipRoute, ...] = ()
    origin: str | None = None  # HostHip.kind: rocm, hip-sdk, distribution (the GPU x HIP rules' hip_from)


class NothingFitsError(SelectionError):
    """No release fits the host and the target (every path: run, plan, warmup, fetch, releases): exit 3."""

    exit_code = exitcodes.CHECK_FAILED

    def __init__(self, message: str, hint: str | None = None, *, selection: Selection | None = None) -> None:
        super().__init__(message, hint)
        self.selection = selection


_MAX_NEED_LINES = 5


def nothing_fits(selection: Selection, found: HipFound | None = None) -> NothingFitsError:
    """The short "nothing fits" error: what was found, what each release for this OS would need,
    how to get there on this system, or ``--zluda-dir``; the long list stays behind ``releases``."""
    c = selection.constraints
    have = found.text if found is not None else (f"HIP {c.hip}" if c.hip else "no HIP/ROCm found")
    torch = f", torch built for CUDA {c.cuda}" if c.cuda else ""
    if c.release:
        head = f"release {c.release} does not fit this host ({c.os}, {have}{torch})"
    else:
        head = f"no ZLUDA release fits this host ({c.os}, {have}{torch})"
    pool = selection.requested if c.release else selection.rejected
    by_need: dict[tuple[str, str], list[str]] = {}
    for rej in pool:
        if rej.blocked_by and rej.needs:
            ids = by_need.setdefault((rej.blocked_by, rej.needs), [])
            if rej.release_id not in ids:
                ids.append(rej.release_id)
    lines = [f"needs {need}: {', '.join(ids)}" for (_, need), ids in list(by_need.items())[:_MAX_NEED_LINES]]
    if not lines:  # nothing for this OS is one step away: the first reasons, as releases gives them
        lines = [f"{r.release_id}/{r.asset_name}: {'; '.join(r.reasons)}" for r in pool
                 if not any(x.startswith("built for") for x in r.reasons)][:3]
    c_gfx = c.gfx or "your GPU"
    rule_lines = [r.reason(c_gfx, c.hip) for r in selection.gpu_rules if c.hip]
    lines = rule_lines + lines
    message = head + (":\n  " + "\n  ".join(lines) if lines else "")
    if selection.instead is not None:
        instead = selection.instead
        message += f"\n  without {{opt:release}}: {instead.release.id}/{instead.asset.name} fits"
    ways = [f"for {c_gfx}: {r.fix}" for r in selection.gpu_rules if r.fix]
    hip_pool = [(rej, req) for rej, req in selection.hip_blocked if any(rej is r for r in pool)]
    for route in found.routes if found is not None and hip_pool else ():
        fits = list(dict.fromkeys(rej.release_id for rej, req in hip_pool
                                  if any(req.accepts(v) for v in route.gives)))
        ways.append(f"{route.how}: " + (f"fits {', '.join(fits)}" if fits else "fits none of these"))
    ways.extend(f"install {need}" for (kind, need) in by_need if kind == "cuda")
    ways.append(("or " if ways else "") + "{opt:zluda_dir DIR} with a ZLUDA you built yourself")
    ways.append("{cmd:releases} lists every release and why; {cmd:doctor} checks the rest "
                "of this host")
    hint = "\n  ".join(ways)
    return NothingFitsError(message, hint, selection=selection)
