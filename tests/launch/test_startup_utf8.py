"""zluda-run's own lines inside the workload (the start-up code's warning when a torch default cannot be
applied, the preload's failure) are UTF-8 under a pipe, as the rest of zluda-run's output
(core/textio), whatever the workload's stderr encoding: on Windows a pipe's is the ANSI code page, where
on 3abffb6 a non-Latin-1 character came out as ``\\u0414`` (cp1252 with backslashreplace). A console
still gets text. The start-up texts are run here as the workload's interpreter runs them."""

from __future__ import annotations

import io
import sys
import types

import pytest

from zluda_runner.core.textio import WORKLOAD_SAY
from zluda_runner.launch.startup import LINUX_SITECUSTOMIZE, TORCH_DEFAULTS
from zluda_runner.launch.windows.preload import SITECUSTOMIZE, STARTUP_CODE
from zluda_runner.plan.defaults import TORCH_DEFAULTS_ENV

REASON = "cuDNN недоступен — ユーザー"  # e.g. a path under a Cyrillic or CJK user name


class _Pipe(io.TextIOWrapper):
    """stderr as Windows gives it to a process whose stderr is a pipe: cp1252, backslashreplace."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="cp1252", errors="backslashreplace")

    def isatty(self) -> bool:
        return False


def _fake_torch() -> types.ModuleType:
    def refuse(flag: bool) -> None:
        raise RuntimeError(REASON)

    torch = types.ModuleType("torch")
    torch.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(enable_flash_sdp=refuse),
                                           cudnn=types.SimpleNamespace(enabled=True))
    return torch


@pytest.mark.parametrize("text", [TORCH_DEFAULTS, STARTUP_CODE, SITECUSTOMIZE, LINUX_SITECUSTOMIZE])
def test_the_start_up_warning_is_utf8_under_a_pipe(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert WORKLOAD_SAY in text  # every start-up text writes through the one writer
    pipe = _Pipe()
    monkeypatch.setattr(sys, "stderr", pipe)
    monkeypatch.setenv(TORCH_DEFAULTS_ENV, "sdpa-fused-off")
    monkeypatch.delenv("ZLUDA_RUNNER_PRELOAD", raising=False)
    monkeypatch.delenv("ZLUDA_RUNNER_MODULES_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch())  # imported already: applied at once
    monkeypatch.setattr(sys, "_zluda_runner_torch_armed", False, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the sitecustomize's hand-over edits sys.path
    monkeypatch.setitem(sys.modules, "sitecustomize", types.ModuleType("sitecustomize"))
    space = {"__name__": "__zluda_runner_startup__", "__file__": "/nowhere/x.py"}
    exec(compile(text, "start-up", "exec"), space)  # noqa: S102 (the workload's interpreter runs it so)
    pipe.flush()
    written = pipe.buffer.getvalue()  # type: ignore[attr-defined]
    assert REASON.encode("utf-8") in written and written.decode("utf-8").count("\n") == 1, written


def test_a_console_gets_text(monkeypatch: pytest.MonkeyPatch) -> None:
    class Console(io.StringIO):
        def isatty(self) -> bool:
            return True

    console = Console()
    monkeypatch.setattr(sys, "stderr", console)
    space: dict[str, object] = {}
    exec(compile(WORKLOAD_SAY, "say", "exec"), space)  # noqa: S102 (as the workload runs it)
    space["_zluda_runner_say"](REASON + "\n")  # type: ignore[operator]
    assert console.getvalue() == REASON + "\n"
