"""Host tools (``rocminfo``, ``rocm_agent_enumerator``, ``hipconfig``) run as children."""

from __future__ import annotations

from collections.abc import Callable

from zluda_runner.core.child import run_child

TOOL_TIMEOUT_S = 15.0

ToolRunner = Callable[[list[str]], str | None]


def run_tool(argv: list[str]) -> str | None:
    """Run a host tool and return its stdout, or None when it is absent, fails or hangs."""
    result = run_child(argv, timeout=TOOL_TIMEOUT_S)
    return result.stdout if result.ok else None
