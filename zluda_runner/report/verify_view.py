"""``--verify-load``'s evidence as text: one line per planned binding, the loader's own words when it
failed (the evidence itself: :mod:`zluda_runner.launch.verify`)."""

from __future__ import annotations

import signal

from zluda_runner.core.proctree import ended_by
from zluda_runner.launch.verdict import NOT_TAKEN, TAKEN, UNPROVEN, UNUSED, VerifyResult


def render_verification(result: VerifyResult) -> str:
    """The evidence as text: one line per binding, the loader's own words when it failed."""
    marks = {TAKEN: "taken", UNUSED: "unused", NOT_TAKEN: "NOT TAKEN", UNPROVEN: "unproven"}
    if result.evidence == "LD_DEBUG":
        lines = ["", "loader evidence (LD_DEBUG):"]
    else:
        count = f"{result.processes} process(es)" if result.processes else "no process"
        lines = ["", f"module evidence (each process's own module list at exit: {count}):"]
    if result.interrupted:
        how = "Ctrl-C" if result.stopped_by in (None, signal.SIGINT) else _named(result.stopped_by)
        if result.stopped_by is not None and result.stopped_by == getattr(signal, "SIGPIPE", None):
            how = "SIGPIPE: the reader of its output went away"
        lines.append(f"  interrupted ({how}, exit {result.exit_code}): the evidence covers what was loaded "
                     "until then")
    lines.extend(f"  ! {line}" for line in result.loader_warnings[:8])
    if result.unproven is not None:
        lines.append(f"  nothing proven: {result.unproven}")
    if result.died_loading:
        why = f"killed by {_named(result.signal)}" if result.signal is not None else "the loader failed"
        lines.append(f"  the run did not get past loading ({why}, exit {result.exit_code}):")
        lines.extend(f"  | {line}" for line in result.loader_errors[:8])
    for ev in result.bindings:
        state = result.state(ev)
        where = ev.actual or ("(no evidence)" if state == UNPROVEN else "(never requested by this run)")
        lines.append(f"  {marks[state]:9} {ev.name:24} -> {where}")
        if state == NOT_TAKEN or (state == UNPROVEN and ev.loader_lines):
            lines.extend(f"              | {line}" for line in ev.loader_lines[-6:])
    counts = {s: sum(1 for ev in result.bindings if result.state(ev) == s) for s in marks}
    lines.append(
        f"{counts[TAKEN]} of {len(result.bindings)} planned bindings taken, {counts[UNUSED]} not used by "
        f"this run, {counts[NOT_TAKEN]} not taken, {counts[UNPROVEN]} unproven"
        + (": VERIFICATION FAILED" if result.failed else "")
    )
    return "\n".join(lines)


def _named(signum: int) -> str:
    """A signal by its name (``SIGSEGV``), through proctree's one helper (a negative return code)."""
    return ended_by(-signum) or f"signal {signum}"
