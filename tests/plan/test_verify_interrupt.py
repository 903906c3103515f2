"""Ctrl-C typed at the terminal during ``--verify-load`` (issue 20 item 3): exit 130, the workload's own
output kept, no "VERIFICATION FAILED ... did not get past loading" (it failed on 1f57098 with exit 3).

The terminal is a real pseudo-terminal: ``^C`` written to its master makes the kernel's tty driver send
SIGINT to the whole foreground process group (zluda-run and the workload), as a user's keypress does."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")


def _read_until(fd: int, needle: bytes, out: bytearray) -> None:
    while needle not in out:
        ready, _, _ = select.select([fd], [], [], 120)  # a hang fails the test instead of blocking it
        assert ready, f"no {needle!r} from the workload; so far:\n{out.decode(errors='replace')}"
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every holder of the terminal is gone
            return
        if not chunk:
            return
        out.extend(chunk)


def _typed_ctrl_c(argv: list[str]) -> tuple[int, str]:
    """``argv`` on a pseudo-terminal, ^C typed once the workload has written its stderr line: the exit
    code and everything the terminal showed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.execvpe(argv[0], argv, dict(os.environ))  # noqa: S606 (argv list, no shell)
        finally:
            os._exit(127)
    out = bytearray()
    try:
        _read_until(fd, b"workload-stderr-line", out)
        os.write(fd, b"\x03")  # ^C: the tty driver sends SIGINT to the foreground group
        _read_until(fd, b"\x00never", out)  # to the end of the output
    except BaseException:  # (on 1f57098 zluda-run hung here after ^C: do not wait for it forever)
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    text = out.decode(errors="replace")
    print(text)
    return os.waitstatus_to_exitcode(status), text


def test_ctrl_c_during_verify_load_is_130_with_the_workload_output_kept(standin_releases,  # type: ignore[no-untyped-def]
                                                                        tmp_path: Path) -> None:
    script = "echo workload-ready; echo workload-stderr-line >&2; read line; echo never-here"
    argv = [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), "--zluda-dir",
            str(standin_releases["good"]), "--no-record", "--verify-load", "--", "sh", "-c", script]
    code, text = _typed_ctrl_c(argv)
    assert code == 130, text
    assert "workload-ready" in text and "workload-stderr-line" in text and "never-here" not in text
    assert "interrupted (Ctrl-C, exit 130)" in text
    code, text = _typed_ctrl_c([*argv[:3], "--json", *argv[3:]])  # the same verification, as its record
    assert code == 130, text
    result = json.loads(text[text.index('{\r\n  "schema"'):])["verify_load"]
    # ended by the user's Ctrl-C (not a death while loading): no loader error, no failed verification
    assert (result["exit_code"], result["stopped_by"], result["signal"], result["loader_errors"],
            result["ok"]) == (130, signal.SIGINT, signal.SIGINT, [], True), result
