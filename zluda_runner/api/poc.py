"""Does it really run? :func:`run_poc`, the proof-of-concept verdict over a workload."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, command_words, keep, to_settings, warn_with
from zluda_runner.api.options import recorded as recorded_call
from zluda_runner.core.argcheck import NotNegative, Runs, Seconds, checked

if TYPE_CHECKING:
    from zluda_runner.poc.model import PocReport


@checked
@recorded_call
def run_poc(
    argv: Sequence[str],
    *,
    runs: Runs = 3,
    reference: str = "cpu",
    native: bool = False,
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
) -> PocReport:
    """Run ``argv`` (``["python", "infer.py"]``) ``runs`` times through ZLUDA with GPU telemetry, once as
    a reference, and judge five criteria, each pass or fail with its evidence (``report.criteria``).
    They are *ran* (every run exited 0), *right* (what it recorded with ``zluda_runner.ab.record`` matches the
    reference), *on the GPU* (telemetry saw the GPU busy or its VRAM held), *stable* (no crash; VRAM
    back to baseline after each run), *speed* (its ``ab.timer`` regions, after run 1 which compiles,
    against the reference's). ``report.exit_code`` is 0 only when all pass, else 3. A failing run is
    a verdict, never an exception. Recorded (kind ``poc``) unless ``Options(record=False)``.

    Args:
        reference: ``"cpu"`` (the same command without ZLUDA, ``CUDA_VISIBLE_DEVICES=""``: torch
            sees no device and the script runs on the CPU), or a command line of a native run
            (a ROCm python and the script; split as a shell would, never run by one).
        native: no ZLUDA: ``argv`` runs as it is (an NVIDIA or native ROCm baseline; NVML telemetry).
        timeout: seconds after which a run is stopped.
        rtol, atol: output tolerances (default: by dtype; float16 at least 1% of the values' size).
        min_speedup: the reference's time over ours that *speed* needs (default 1.0 against the CPU,
            0.5 against a native command).
        interval: seconds between telemetry samples (default 0.2).
        root: read GPU telemetry under this fake system tree (default: ``$ZLUDA_RUNNER_ROOT``, else /).
        progress: hears one line per run. on_warning: hears the host's, the launch's and the store's
            warnings. command: the command line recorded (default: this call and its arguments).

    Raises:
        what :func:`prepare_launch` raises (no release, a fatal plan); HostError: nothing to run,
        a reference command that cannot be split; ArgumentValueError: a number out of its range.
    """
    from zluda_runner.host.fs import root_from_env
    from zluda_runner.poc.model import Thresholds
    from zluda_runner.poc.session import PocRequest
    from zluda_runner.poc.session import run_poc as run_verdict
    from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S

    settings = to_settings(options)
    hear = warn_with(on_warning)
    with caller_errors():
        request = PocRequest(
            command=tuple(command_words(argv)), runs=runs, reference=reference, native=native,
            thresholds=Thresholds(rtol=rtol, atol=atol, min_speedup=min_speedup),
            root=Path(root) if root is not None else root_from_env(),
            interval_s=DEFAULT_INTERVAL_S if interval is None else interval, timeout=timeout,
        )
        report, refs = run_verdict(request, settings, progress=progress, on_warning=hear)
    keep("poc", report, settings, command, on_warning=on_warning, refs=refs, argv=request.command,
         planned=not native)
    return report
