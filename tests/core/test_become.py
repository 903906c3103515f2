"""The one exec (core/become.exec_replacing) resets SIGPIPE and SIGXFSZ to their defaults for the workload;
when no exec happens -- the start's OSError, or anything raised in its place -- this process keeps the
dispositions it had (a leaked SIG_DFL SIGPIPE ends a Python process at its next write to a closed pipe or
socket: the test session's own HTTP server died of it)."""

from __future__ import annotations

import os
import signal

import pytest

from zluda_runner.core import become

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="POSIX signals")


class Stopped(BaseException):
    """Raised where the exec would have been."""


@pytest.mark.parametrize("raised", [OSError(2, "No such file or directory"), Stopped()],
                         ids=["start-error", "anything-else"])
def test_no_exec_leaves_the_signals_as_they_were(monkeypatch: pytest.MonkeyPatch,
                                                 raised: BaseException) -> None:
    seen: dict[int, object] = {}

    def execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        seen.update({sig: signal.getsignal(sig) for sig in become.named_signals("SIGPIPE", "SIGXFSZ")})
        raise raised

    before = {sig: signal.getsignal(sig) for sig in become.named_signals("SIGPIPE", "SIGXFSZ")}
    monkeypatch.setattr(os, "execve", execve)
    with pytest.raises(type(raised)):
        become.exec_replacing("/nonexistent/program", ["program"], {})
    assert set(seen.values()) == {signal.SIG_DFL}  # what the workload would have started with
    assert {sig: signal.getsignal(sig) for sig in before} == before
