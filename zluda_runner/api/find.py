"""Out of version hell: :func:`find`, the search for a ZLUDA combination that works, and its lock."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, command_words, keep, to_settings, warn_with
from zluda_runner.api.options import recorded as recorded_call
from zluda_runner.core.argcheck import NotNegative, Runs, Seconds, checked

if TYPE_CHECKING:
    from zluda_runner.finder.model import FindReport


@checked
@recorded_call
def find(
    argv: Sequence[str],
    *,
    runs: Runs = 1,
    reference: str = "cpu",
    candidates: Sequence[Path | str] = (),
    only_candidates: bool = False,
    budget: Seconds | None = None,
    lock: Path | str | None = "zluda.lock",
    known_from: Path | str | None = None,
    options: Options | None = None,
    timeout: Seconds | None = None,
    rtol: NotNegative | None = None,
    atol: NotNegative | None = None,
    min_speedup: NotNegative | None = None,
    interval: Seconds | None = None,
    root: Path | str | None = None,
    progress: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    command: Sequence[str] | None = None,
) -> FindReport:
    """Search for a ZLUDA combination that runs ``argv`` (``["python", "infer.py"]``), and lock it.

    The candidates, in order: the known-good locks of ``known_from`` for this GPU, the manifest's
    releases that fit this host and torch (the release resolver's ranked list), each of ``candidates``
    (a ZLUDA folder or a release archive), then ``Options(zluda_dir=...)``; after a candidate's defaults
    ran and did not pass, its variants: the host's other HIP SDKs / ROCm folders (also after a FATAL
    plan), pinned memory off where the manifest says the release lacks it, cuDNN off (or on where MIOpen
    is present), the injector on Windows. Each is
    judged exactly as :func:`run_poc` judges: a plan that is FATAL costs no run; a run that crashes is
    named by its signal or exit code and first error line. The search stops at the first candidate that
    passes every criterion that can be judged here, at ``budget`` seconds, or at Ctrl-C
    (``report.stopped == "interrupted"``, exit code 130, what was judged so far kept). Without GPU
    telemetry "on the GPU" is not shown, never passed: the best candidate is locked marked "not proven
    on the GPU" and ``report.exit_code`` is 3; with telemetry all five criteria must pass for 0.
    Recorded (kind ``find``) unless ``Options(record=False)``.

    Args:
        candidates: ZLUDA folders or release archives to try besides the manifest's releases.
        only_candidates: try only ``candidates`` (and ``Options(zluda_dir=...)``).
        budget: seconds after which no further candidate is started.
        lock: where the lock is written (None: not written).
        known_from: a results bundle (``results export``; a file or an https URL) whose known-good
            locks for this GPU are tried first (a folder's lock: matched by its files' hashes against
            ``candidates``).
        runs, reference, timeout, rtol, atol, min_speedup, interval, root: as for :func:`run_poc`.
        progress: hears a line per candidate tried and judged.

    Raises:
        HostError: nothing to run, no candidate to try, a reference that cannot be split;
        ArgumentValueError: a number out of its range.
    """
    from zluda_runner.finder.search import FindRequest, run_find
    from zluda_runner.host.fs import root_from_env
    from zluda_runner.poc.model import Thresholds
    from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S

    settings = to_settings(options)
    hear = warn_with(on_warning)
    with caller_errors():
        request = FindRequest(
            command=tuple(command_words(argv)), runs=runs, reference=reference,
            candidates=tuple(Path(c) for c in candidates), only_given=only_candidates, budget_s=budget,
            lock_path=Path(lock) if lock is not None else None,
            thresholds=Thresholds(rtol=rtol, atol=atol, min_speedup=min_speedup),
            root=Path(root) if root is not None else root_from_env(),
            interval_s=DEFAULT_INTERVAL_S if interval is None else interval, timeout=timeout,
            known_from=None if known_from is None else str(known_from),
        )
        report, refs = run_find(request, settings, progress=progress, on_warning=hear)
    keep("find", report, settings, command, on_warning=on_warning, refs=refs, argv=request.command,
         planned=False)
    return report
