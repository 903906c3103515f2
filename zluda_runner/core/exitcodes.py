"""The exit codes of ``zluda-run``: one table, documented in the README.

A run passes the workload's own exit code through; everything else uses these.
"""

from __future__ import annotations

OK = 0
ERROR = 1  # zluda-run could not do what was asked (bad input, download failed, ...)
USAGE = 2  # click's usage errors: unknown option, missing argument
CHECK_FAILED = 3  # a check or comparison failed: fatal plan verdict, failed probe/doctor/ab, drift
NOT_EXECUTABLE = 126  # the workload exists but cannot be executed (like a shell)
NOT_FOUND = 127  # the workload's command does not exist (like a shell)
INTERRUPTED = 130  # Ctrl-C

TABLE: tuple[tuple[int, str], ...] = (
    (OK, "success (for a run: the workload's own exit code is passed through)"),
    (ERROR, "error: zluda-run could not do what was asked"),
    (USAGE, "usage error (unknown option, missing argument)"),
    (CHECK_FAILED, "a check or comparison failed: fatal plan verdict, failed probe/doctor/ab, drift"),
    (NOT_EXECUTABLE, "the workload exists but cannot be executed"),
    (NOT_FOUND, "the workload's command was not found"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)
