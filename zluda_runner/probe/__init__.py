"""Active probes: driver API cases through cffi, and torch ops in the target interpreter."""
