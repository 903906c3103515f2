"""GPU telemetry while a workload runs: busy %, VRAM, power, temperature, sampled in the background.

Back ends sit behind one protocol, :class:`~zluda_runner.telemetry.source.TelemetrySource`: the
amdgpu driver's sysfs files (Linux), the OS's GPU performance counters through PDH (Windows), and
NVML (NVIDIA, for ``--native`` runs, only when ``pynvml`` is importable).
:func:`~zluda_runner.telemetry.sampler.open_source` picks one, or says why none can be read
(:class:`~zluda_runner.telemetry.model.NoTelemetry`); :class:`~zluda_runner.telemetry.sampler.Sampling`
samples it on a daemon thread at a steady rate, bounded in memory, for as long as the workload runs.
"""
