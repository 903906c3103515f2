"""``zluda-run poc``: does it really run?  The proof-of-concept verdict.

The workload runs N times through ZLUDA (or natively) with GPU telemetry, and once as a reference
(the CPU, or a native ROCm command); five criteria are judged, each pass or fail with its evidence:
ran, right (its ``ab.record`` outputs match the reference's), on the GPU (telemetry saw it busy),
stable (no crash; VRAM back to baseline after each run), speed (its ``ab.timer`` regions against
the reference's).  Exit 0 only when all pass.
"""
