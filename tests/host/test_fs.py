"""host/fs.py: the one fake-root filesystem every host reader goes through."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from zluda_runner.host.fs import MAX_SMALL_BYTES, HostFs


def test_posix_and_windows_paths_map_under_the_root(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    assert fs.path("/opt/rocm/.info/version") == tmp_path / "opt" / "rocm" / ".info" / "version"
    assert fs.path("C:\\Program Files\\AMD\\ROCm") == tmp_path / "Program Files" / "AMD" / "ROCm"
    assert HostFs(None).path("/opt/rocm") == Path("/opt/rocm")


def test_reads_are_bounded_and_refuse_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    (tmp_path / "opt" / "rocm" / ".info").mkdir(parents=True)
    (tmp_path / "opt" / "rocm" / ".info" / "version").write_text("6.4.0-15396\n")
    (tmp_path / "big").write_bytes(b"x" * (MAX_SMALL_BYTES + 1))
    assert fs.read_small("/opt/rocm/.info/version") == "6.4.0-15396\n"
    assert fs.read_small("/big") is None and fs.read_text("/big") == "x" * (MAX_SMALL_BYTES + 1)
    assert fs.read_small("/missing") is None and fs.read_small("/opt") is None
    if sys.platform != "win32":
        os.mkfifo(tmp_path / "fifo")  # no writer: a plain open would wait for ever
        assert fs.read_small("/fifo") is None and fs.read_text("/fifo") is None


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_names_and_link_targets(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    lib = tmp_path / "usr" / "lib"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.5.2.21153").write_bytes(b"")
    os.symlink("libamdhip64.so.5.2.21153", lib / "libamdhip64.so.5")
    assert fs.names("/usr/lib") == ["libamdhip64.so.5", "libamdhip64.so.5.2.21153"]
    assert fs.readlink_name("/usr/lib", "libamdhip64.so.5") == "libamdhip64.so.5.2.21153"
    assert fs.readlink_name("/usr/lib", "libamdhip64.so.5.2.21153") is None
    assert fs.names("/nowhere") == [] and fs.is_dir("/usr/lib") and not fs.exists("/nowhere")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_the_kfd_topology_is_read_through_the_bounded_reader(tmp_path: Path) -> None:
    """host/gpus read a KFD node's files with a plain read_text (unbounded, and a FIFO there waited for a
    writer for ever): now through read_small, as every host file. A node whose ``name`` is a FIFO is
    listed without its name; one whose ``properties`` is larger than a sysfs attribute can be is not
    read. Run in a child so that the old hang ends (as a failure) instead of stopping the suite."""
    import subprocess
    import textwrap

    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes"
    for node, props in (("1", "simd_count 96\nsimd_per_cu 2\ngfx_target_version 110000\n"),
                        ("2", "simd_count 96\ngfx_target_version 110000\n" + "x" * MAX_SMALL_BYTES)):
        (nodes / node).mkdir(parents=True)
        (nodes / node / "properties").write_text(props)
    os.mkfifo(nodes / "1" / "name")
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from zluda_runner.host.fs import HostFs
        from zluda_runner.host.gpus import gpus_from_kfd
        print([(g.gfx, g.name, g.compute_units) for g in gpus_from_kfd(HostFs(Path(sys.argv[1])))])
    """)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "[('gfx1100', '', 48)]"), done.stderr


# ------------------------------------------------------------------ the one reader, held

# What reads the file system (or what a file system read is made of), called past HostFs
_READS = {"open", "read_text", "read_bytes", "stat", "lstat", "exists", "is_file", "is_dir", "is_symlink",
          "iterdir", "glob", "rglob", "scandir", "listdir", "readlink", "access", "isfile", "isdir", "islink",
          "realpath", "samefile", "getsize", "getmtime", "walk", "which", "read_small", "names"}
_READERS = {"open", "read_small", "peek_elf_header", "read_elf", "read_ld_so_cache", "read_regular",
            "open_regular", "real_path", "ldconfig_p"}
# Functions of host/ that read past it, each for a reason that keeps it off a launch's path
_ALLOWED = {
    ("compile_cache.py", "_cache_files"), ("compile_cache.py", "_is_link"),  # ZLUDA's compute cache:
    ("compile_cache.py", "_matching_files"), ("compile_cache.py", "clear_caches"),  # `cache`, doctor
    ("gpus.py", "discover_gpus"),  # the doctor's tools (rocminfo), found on PATH and run
    ("hipsdk.py", "release_dlls"),  # a Windows release folder's DLLs (the release's files, not the host's)
    ("libraries.py", "launch_loader_env", "ldconfig_p"),  # an ld.so.cache of the old format: ldconfig's
}                                                         # answer, which taints the trace (never remembered)


def _past_hostfs(path: Path) -> list[str]:
    """The calls in ``path`` that read the file system other than through a HostFs (``fs``, ``x.fs``,
    ``x_fs``) or core/observe: ``function: call``."""
    import ast

    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        if (path.name, function.name) in _ALLOWED:
            continue
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            func = call.func
            if isinstance(func, ast.Name) and func.id in _READERS \
                    and (path.name, function.name, func.id) not in _ALLOWED:
                found.append(f"{path.name} {function.name}: {func.id}()")
            elif isinstance(func, ast.Attribute) and func.attr in _READS:
                owner = ast.unparse(func.value)
                if owner != "fs" and not owner.endswith((".fs", "_fs")) and owner != "observe":
                    found.append(f"{path.name} {function.name}: {owner}.{func.attr}()")
    return found


def test_the_host_and_the_defaults_facts_read_only_through_hostfs() -> None:
    """host/ (but fs.py itself) and the defaults' facts read the file system through HostFs alone: each of
    its reads is an observation the launch memo makes again (tests/commands/test_launch_memo.py), so a read
    past it would be a fact the memo does not check. (A call's receiver is judged by its name: ``fs``; the
    memo's audit-hook test catches, at run time, what a name hides.)"""
    package = Path(__file__).resolve().parents[2] / "zluda_runner"
    modules = [p for p in sorted((package / "host").glob("*.py")) if p.name != "fs.py"]
    modules += [package / "plan" / "defaults_facts.py", package / "plan" / "defaults.py"]
    assert [hit for module in modules for hit in _past_hostfs(module)] == []


def test_the_check_sees_a_read_past_hostfs(tmp_path: Path) -> None:
    """(The check above can fail.)"""
    module = tmp_path / "quick.py"
    module.write_text("def f(node, fs):\n    a = (node / 'name').read_text()\n    b = fs.read_small('/x')\n"
                      "    c = read_small(node)\n    return os.listdir(node), a, b, c\n")
    assert _past_hostfs(module) == ["quick.py f: node / 'name'.read_text()", "quick.py f: read_small()",
                                    "quick.py f: os.listdir()"]
