"""Driver-call traces: ZLUDA's own tracer logs or our interposer's counts, one TraceReport."""
