"""The one LD_DEBUG parser (zluda_runner.loader.ldlog), read by both launch.verify and ldso.

Real runs show the glibc behaviours the two former parsers disagreed on; small hand-written
logs pin the rest (interleaved processes, a process that died before any init).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.launch.verify import evidence_for, read_ld_debug_logs
from zluda_runner.loader.ldlog import bound_files, parse_ld_debug

NAME = "libfoo.so.1"
MODES = ["libs", "libs,files"]


@pytest.fixture(scope="module")
def foo(cc_build) -> Path:
    return cc_build(["launch/foo.c"], NAME, args=['-DFOO_ID="real"', f"-Wl,-soname,{NAME}"])


def _run_logged(code: str, mode: str, logs: Path, extra_env: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
    env.update(extra_env, LD_DEBUG=mode, LD_DEBUG_OUTPUT=str(logs / "ld"))
    logs.mkdir()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    return proc.stdout


FORK_CLIENT = (
    "import ctypes, os\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    f"    ctypes.CDLL({NAME!r})\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "print(os.getpid(), pid)\n"
)


@pytest.mark.parametrize("mode", MODES)
def test_a_forked_child_is_read_as_its_own_process(foo: Path, tmp_path: Path, mode: str) -> None:
    """A forked child keeps writing into its parent's ld.<pid> file, under its own pid."""
    logs = tmp_path / "logs"
    out = _run_logged(FORK_CLIENT, mode, logs, {"LD_LIBRARY_PATH": str(foo.parent)})
    parent, child = map(int, out.split())
    parsed = read_ld_debug_logs(logs)
    assert parent in {log.pid for log in parsed} and child in {log.pid for log in parsed}
    [binding] = evidence_for(parsed, {NAME: foo})
    assert binding.taken, binding.loader_lines
    assert binding.pids == [child]
    child_text = "".join(p.read_text() for p in logs.iterdir())
    assert bound_files(parse_ld_debug(child_text, pid=child))[NAME] == str(foo.parent / NAME)
    assert NAME not in bound_files(parse_ld_debug(child_text, pid=parent))


REUSE_CLIENT = (
    "import ctypes, sys\n"
    "ctypes.CDLL(sys.argv[1])\n"
    "ctypes.CDLL('libfoo.so')\n"
)


@pytest.mark.parametrize("mode", MODES)
def test_a_search_that_finds_an_already_loaded_file(foo: Path, tmp_path: Path, mode: str) -> None:
    """glibc matches the found file by device+inode and maps nothing: the search still bound the name."""
    links = tmp_path / "links"
    links.mkdir()
    (links / "libfoo.so").symlink_to(foo)
    logs = tmp_path / "logs"
    code = REUSE_CLIENT.replace("sys.argv[1]", repr(str(foo)))
    _run_logged(code, mode, logs, {"LD_LIBRARY_PATH": str(links)})
    parsed = read_ld_debug_logs(logs)
    [binding] = evidence_for(parsed, {"libfoo.so": foo})
    assert binding.taken, binding.loader_lines
    assert any(f"trying file={links / 'libfoo.so'}" in line for line in binding.loader_lines)
    bound = bound_files(parsed)
    assert bound["libfoo.so"] == str(links / "libfoo.so")
    assert str(foo) not in bound  # the same file as the search's: not listed again under its path


def test_interleaved_processes_do_not_mix_their_searches() -> None:
    text = (
        "      300:\tfind library=liba.so.1 [0]; searching\n"
        "      300:\t search cache=/etc/ld.so.cache\n"
        "      301:\tfind library=libb.so.2 [0]; searching\n"
        "      300:\t  trying file=/opt/a/liba.so.1\n"
        "      301:\t search path=/opt/b\t\t(LD_LIBRARY_PATH)\n"
        "      301:\t  trying file=/opt/b/libb.so.2\n"
        "      301:\t\n"
        "      300:\t\n"
        "      300:\tfile=liba.so.1 [0];  generating link map\n"
        "      301:\tfile=libb.so.2 [0];  generating link map\n"
    )
    seen = {log.pid: [(e.request, e.file, e.pid) for e in log.events] for log in parse_ld_debug(text)}
    assert seen == {
        300: [("liba.so.1", "/opt/a/liba.so.1", 300)],
        301: [("libb.so.2", "/opt/b/libb.so.2", 301)],
    }
    assert bound_files(parse_ld_debug(text)) == {"liba.so.1": "/opt/a/liba.so.1",
                                                 "libb.so.2": "/opt/b/libb.so.2"}
    assert [log.pid for log in parse_ld_debug(text, pid=301)] == [301]


def test_a_process_that_died_before_any_init_keeps_the_files_it_found(foo: Path) -> None:
    """libs only, a later DT_NEEDED missing (fatal): what was found is evidence, what was not is dropped."""
    text = (
        f"      400:\tfind library={NAME} [0]; searching\n"
        f"      400:\t search path={foo.parent}\t\t(LD_LIBRARY_PATH)\n"
        f"      400:\t  trying file={foo}\n"
        "      400:\t\n"
        "      400:\tfind library=libgone.so.7 [0]; searching\n"
        "      400:\t search path=/nowhere\t\t(LD_LIBRARY_PATH)\n"
        "      400:\t  trying file=/nowhere/libgone.so.7\n"
        "      400:\t\n"
        "./app: error while loading shared libraries: libgone.so.7: cannot open shared object file\n"
    )
    assert bound_files(parse_ld_debug(text)) == {NAME: str(foo)}
    [log] = parse_ld_debug(text)
    [found, gone] = evidence_for([log], {NAME: foo, "libgone.so.7": Path("/nowhere/libgone.so.7")})
    assert found.taken and found.pids == [400]
    assert not gone.taken and gone.actual is None


def test_init_lines_name_objects_not_otherwise_seen() -> None:
    text = (
        "      500:\tcalling init: /lib64/ld-linux-x86-64.so.2\n"
        "      500:\t\n"
        "      500:\tcalling init: <main program>\n"
    )
    [log] = parse_ld_debug(text)
    assert [(e.request, e.how) for e in log.events] == [("/lib64/ld-linux-x86-64.so.2", "init")]
    assert bound_files(parse_ld_debug(text)) == {"/lib64/ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2"}
