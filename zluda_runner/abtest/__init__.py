"""``zluda-run ab``: run a workload on two sides (A: under ZLUDA, B: native ROCm), alternating
A, B, A, B, and compare what it recorded through :mod:`zluda_runner.ab`.

:mod:`.model` (the report's data) · :mod:`.sides` (the two commands) · :mod:`.run`
(running them, reading records) · :mod:`.compare` (outputs, timings, verdict) ·
:mod:`.view` (text, HTML).  The in-workload API stays :mod:`zluda_runner.ab`.
"""
